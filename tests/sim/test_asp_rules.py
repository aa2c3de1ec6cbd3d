import pytest

from hw.errors import InputError
from hw.nm import check_nm
from sim.asp_rules import ACT_GEMM, CONV, DEPTHWISE, WEIGHT_GEMM, weight_verdict


def test_bert_linear_is_sparsifiable():
    assert weight_verdict(WEIGHT_GEMM, (3072, 768)).sparsifiable


def test_attention_scores_stay_dense():
    v = weight_verdict(ACT_GEMM, None)
    assert not v.sparsifiable and "activation x activation" in v.reason


def test_resnet_conv1_stays_dense():
    # ResNet-50 conv1: weight (64, 3, 7, 7); size(1)=3 fails apex's % 16 rule.
    v = weight_verdict(CONV, (64, 3, 7, 7))
    assert not v.sparsifiable and "16" in v.reason


def test_depthwise_stays_dense():
    assert not weight_verdict(DEPTHWISE, (32, 1, 3, 3)).sparsifiable


def test_classifier_head_with_odd_outputs_stays_dense():
    # e.g. a 1000-class head is fine (1000 % 8 == 0) but a 10-class head is not.
    assert weight_verdict(WEIGHT_GEMM, (1000, 2048)).sparsifiable
    assert not weight_verdict(WEIGHT_GEMM, (10, 64)).sparsifiable


@pytest.mark.parametrize("n,m", [(3, 4), (0, 4), (4, 4), (2, 6), (1, 1)])
def test_bad_nm_rejected(n, m):
    with pytest.raises(InputError):
        check_nm(n, m)


@pytest.mark.parametrize("n,m", [(1, 4), (2, 4), (2, 8), (4, 8), (1, 2)])
def test_good_nm_accepted(n, m):
    check_nm(n, m)
