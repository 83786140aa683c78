"""The one parser of measure names: ir_measures' syntax, its aliases and trec_eval's names."""

from __future__ import annotations

import pytest

from ragtriage.metrics.measures import Measure, MeasureError, measures_for_ks, parse_measure, parse_measures


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nDCG@10", Measure("nDCG", cutoff=10)),
        ("nDCG(dcg='exp-log2')@10", Measure("nDCG", cutoff=10, dcg="exp-log2")),
        ("P(rel=2)@5", Measure("P", cutoff=5, rel=2)),
        ("R@100", Measure("R", cutoff=100)),
        ("RR@10", Measure("RR", cutoff=10)),
        ("MRR@10", Measure("RR", cutoff=10)),
        ("AP", Measure("AP")),
        ("MAP@100", Measure("AP", cutoff=100)),
        ("Rprec", Measure("Rprec")),
        ("R-prec", Measure("Rprec")),
        ("BPref(rel=3)", Measure("Bpref", rel=3)),
        ("Judged@10", Measure("Judged", cutoff=10)),
        ("Success@10", Measure("Success", cutoff=10)),
        ("NumRet", Measure("NumRet")),
        ("NumRet(rel=1)", Measure("NumRelRet", rel=1)),
        ("NumRelRet", Measure("NumRelRet")),
        ("NumQ", Measure("NumQ")),
        ("P_10", Measure("P", cutoff=10)),
        ("ndcg_cut_5", Measure("nDCG", cutoff=5, dcg="log2")),
        ("map", Measure("AP")),
        ("recip_rank", Measure("RR")),
        ("num_rel_ret", Measure("NumRelRet")),
    ],
)
def test_parse(text: str, expected: Measure) -> None:
    assert parse_measure(text) == expected


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("nDCG(dcg='exp')@10", "dcg='exp'"),
        ("P@0", "cutoff 0"),
        ("P", "needs a cutoff"),
        ("Rprec@10", "takes no cutoff"),
        ("P(k=3)@5", "no parameter 'k'"),
        ("Foo@3", "unknown measure 'Foo'"),
        ("P(rel='x')@5", "rel='x'"),
        ("P(2)@5", "must be named"),
        ("nDCG@@10", "ir_measures' syntax"),
    ],
)
def test_errors_name_the_bad_part(text: str, part: str) -> None:
    with pytest.raises(MeasureError, match=None) as info:
        parse_measure(text)
    assert part in str(info.value) and text in str(info.value)


def test_resolve_fills_left_out_parameters_and_says_so() -> None:
    m = parse_measure("nDCG@10").resolve(threshold=2, gain="exponential")
    # the exponential gain never prints as plain nDCG@10: that name is trec_eval's linear figure
    assert (m.dcg, str(m), m.parameters()) == (
        "exp-log2",
        "nDCG(dcg='exp-log2')@10",
        "cutoff=10, dcg=exp-log2 (--gain)",
    )
    lin = parse_measure("nDCG@10").resolve(threshold=2, gain="linear")
    assert (lin.dcg, str(lin), lin.parameters()) == ("log2", "nDCG@10", "cutoff=10, dcg=log2 (--gain)")
    p = parse_measure("P(rel=1)@5").resolve(threshold=2, gain="linear")
    assert (p.rel, str(p), p.parameters()) == (1, "P(rel=1)@5", "cutoff=5, rel=1")
    assert parse_measure("P@5").resolve(2, "linear").parameters() == "cutoff=5, rel=2 (dataset threshold)"
    assert parse_measure("NumRet").resolve(2, "linear").rel is None


def test_trec_names() -> None:
    names = [m.resolve(2, "linear").trec_name(2) for m in measures_for_ks([5, 10], trec=True)]
    assert names == [
        "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
        "P_5", "P_10", "recall_5", "recall_10", "ndcg_cut_5", "ndcg_cut_10", "map_cut_5", "map_cut_10",
        "success_5", "success_10",
    ]  # fmt: skip
    assert parse_measure("P(rel=1)@5").trec_name(2) is None  # trec_eval has one -l for all measures
    assert parse_measure("nDCG(dcg='exp-log2')@5").trec_name(2) is None
    assert parse_measure("RR@10").trec_name(2) is None


def test_parse_measures_drops_duplicates_and_refuses_none() -> None:
    assert parse_measures(["P@5", "P_5", "AP"]) == [Measure("P", cutoff=5), Measure("AP")]
    with pytest.raises(MeasureError):
        parse_measures([])
