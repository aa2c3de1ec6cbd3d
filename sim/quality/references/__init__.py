"""The proxy reference models: the digits MLP (mlp, reference), the char-level transformer LM
(charlm, transformer), the digits CNN (cnn). Their shipped results: sim/quality/shipped/."""
