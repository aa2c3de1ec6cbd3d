"""Design space, evaluator, Optuna studies, reports and the command line. The only room that
joins sim/ and ppa/."""
