"""The benchmark report's server-delivery table and what it puts beside the targets it
bounds (``bench/compare_report.py``), from a made-up result set."""

from __future__ import annotations

from typing import Any

from bench.compare_report import handler_cost_us, markdown


def sync(seconds: float) -> dict[str, Any]:
    return {"seconds": seconds, "rss_kb": 2000, "baseline_rss_kb": 1000,
            "peak_rss_kb": 2500, "load": 1.0}


def sent(seconds: float, size: int, load: float = 1.0) -> dict[str, Any]:
    return {"seconds": seconds, "bytes": size, "load": load}


def report(real: dict[str, Any]) -> dict[str, Any]:
    return {"args": {"repeats": 3, "pods": 100, "real_pods": 30, "handlers": 10},
            "date": "2026-11-26", "load_limit": 2.5,
            "sizes": {"real": {"pod_bytes": 3500, "list_bytes": 105_000, "pages": 1}},
            "sections": {"real": real}}


def test_the_delivery_table_and_the_bounds_beside_the_targets() -> None:
    text = markdown(report({
        "cc-dict/list": {"label": "cc LIST", "sync": [sync(2.0), sync(2.4), sync(2.2)]},
        "cc-dict/watch-list": {"label": "cc WL", "sync": [sync(4.0)]},
        "cc-struct/list": {"label": "cc struct", "sync": [sync(2.6)]},
        "client-go/list/protobuf": {"label": "go pb", "sync": [sync(1.6)]},
        "wire/list": {"label": "wire JSON LIST",
                      "delivery": [sent(1.8, 106_000_000), sent(2.0, 106_000_000),
                                   sent(1.9, 106_000_000)]},
        "wire/watch-list": {"label": "wire JSON WL",
                            "delivery": [sent(4.18, 108_000_000, load=3.0)]},
        "wire/list/protobuf": {"label": "wire pb LIST", "delivery": [sent(1.52, 78_000_000)]},
        "cc-dict/list/protobuf": {"label": "cc pb LIST", "sync": [sync(2.0)]},
        "cc-dict/watch-list/protobuf": {"label": "cc pb WL", "sync": [sync(3.0)]},
        "cc-struct/list/protobuf": {"label": "cc struct pb", "sync": [sync(2.4)]},
    }))
    assert "| wire JSON LIST | 1.90 (1.80-2.00) | 106 | 1.00x |" in text
    assert "| wire JSON WL | 4.18 (4.18-4.18)† | 108 | 2.20x |" in text
    assert "| wire pb LIST | 1.52 (1.52-1.52) | 78 | 0.80x |" in text
    lines = text.splitlines()
    at = lines.index("- S1 real apiserver, client_cache dicts watch-list / LIST: 1.82x "
                     "(target <= 1.00x): missed by 1.82x")
    assert lines[at + 1] == ("  - beside it, client_cache dicts asking for protobuf, "
                             "watch-list / LIST: 1.50x")
    assert lines[at + 2] == ("  - beside it, the server's own delivery of the JSON watch-list "
                             "/ its JSON LIST, nothing decoded: 2.20x")
    # like for like: the structs asking for protobuf, the JSON ones beside them
    at = lines.index("- S1 real apiserver, client_cache structs asking for protobuf (LIST) / "
                     "client-go protobuf (LIST): 1.50x (target <= 1.00x): missed by 1.50x")
    assert lines[at + 1] == ("  - beside it, client_cache structs reading JSON (LIST) / "
                             "client-go protobuf (LIST): 1.62x")
    assert lines[at + 2] == ("  - beside it, the server's delivery of the JSON LIST alone, "
                             "nothing decoded / client-go's protobuf sync: 1.19x")


def test_no_delivery_rows_no_table_and_nothing_beside_the_targets() -> None:
    text = markdown(report({"cc-dict/list": {"label": "cc LIST", "sync": [sync(2.0)]}}))
    assert "server's own delivery" not in text
    assert "beside it" not in text


def test_the_machine_line_and_each_further_handlers_cost() -> None:
    base = report({})
    base["sizes"]["replay"] = {"pods": 100, "events": 1000, "pod_bytes": 2000}
    base["sections"]["replay"] = {"cc-dict/list": {
        "label": "cc LIST",
        "throughput": [{"events_per_second": 25_000.0, "load": 1.0}],
        "fanout": [{"events_per_second": 20_000.0, "load": 1.0}]}}
    base["handoff_us"] = {"at the start": {"us": 111.4, "load": 0.5},
                          "at the end": {"us": 12.0, "load": 1.0}}
    lines = markdown(base).splitlines()
    assert ("The machine: a round trip between two Python threads waking each other "
            "through locks took 111 us at the start; 12 us at the end (`bench/machine.py`; "
            "every thread hand-off of an informer pays for it).") in lines
    at = lines.index("- S3 replay, client_cache dicts, per-handler rate with 10 handlers / "
                     "one handler's: 0.80x (target >= 0.80x): met")
    # (1/20,000 - 1/25,000) s over 9 further handlers: 10 us / 9
    assert lines[at + 1] == ("  - beside it, each handler beyond the first added 1.1 us an "
                             "event (0.8x needs 1.1 us or less)")


def test_no_probe_no_machine_line_and_no_cost_without_both_rates() -> None:
    assert handler_cost_us(25_000.0, None, 10) is None
    assert handler_cost_us(25_000.0, 20_000.0, 1) is None
    assert "The machine:" not in markdown(report({}))
