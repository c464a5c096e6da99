"""The side-by-side benchmark's report: tables, ratios and issue 20's targets in Markdown,
and a chart, from the results ``bench/bench_compare.py`` gathered.

A result set is ``report["sections"][section][variant]``: ``label`` and, per scenario
(``sync``, ``throughput``, ``latency``, ``fanout``, ``fanout_sync``, ``transform``,
``delivery``, ``s4``, ``s5``), the list of each repeat's result, each with the 1-minute
load when its run began.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

__all__ = ["chart", "markdown"]

Entry = dict[str, Any]
MARK = "†"  # a run began above the load limit


def values(entry: Entry | None, scenario: str, metric: str, pods: int = 0) -> list[float]:
    """Each repeat's ``metric`` (``bytes_per_object`` and ``peak_over_steady`` derived)."""
    if entry is None:
        return []
    out = []
    for r in entry.get(scenario, []):
        if metric == "bytes_per_object":
            out.append((r["rss_kb"] - r["baseline_rss_kb"]) * 1024 / pods)
        elif metric == "peak_over_steady":
            out.append((r["peak_rss_kb"] - r["baseline_rss_kb"])
                       / max(1, r["rss_kb"] - r["baseline_rss_kb"]))
        elif metric == "peak_rss_mb":
            out.append(r["peak_rss_kb"] / 1024)
        elif metric in r:
            out.append(float(r[metric]))
    return out


def med(entry: Entry | None, scenario: str, metric: str, pods: int = 0) -> float | None:
    got = values(entry, scenario, metric, pods)
    return statistics.median(got) if got else None


def loaded(entry: Entry | None, scenario: str, limit: float) -> bool:
    return any(r.get("load", 0) > limit for r in (entry or {}).get(scenario, []))


def cell(entry: Entry | None, scenario: str, metric: str, fmt: str, limit: float,
         pods: int = 0) -> str:
    got = values(entry, scenario, metric, pods)
    if not got:
        return "n/a"
    mark = MARK if loaded(entry, scenario, limit) else ""
    return (f"{format(statistics.median(got), fmt)} ({format(min(got), fmt)}-"
            f"{format(max(got), fmt)}){mark}")


def ratio(value: float | None, other: float | None) -> str:
    return "-" if not value or not other else f"{value / other:.2f}x"


def max_load(entry: Entry, scenario: str) -> str:
    loads = [r.get("load", 0.0) for r in entry.get(scenario, [])]
    return f"{max(loads):.1f}" if loads else "-"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def s1_rows(section: dict[str, Entry], pods: int, limit: float) -> list[list[str]]:
    floor = med(section.get("floor/list"), "sync", "seconds")
    rows = []
    for key, entry in section.items():
        if "sync" not in entry:
            continue
        cached = "- (no cache)" if key.startswith("floor/") else \
            cell(entry, "sync", "bytes_per_object", ",.0f", limit, pods)
        rows.append([entry["label"], cell(entry, "sync", "seconds", ".2f", limit),
                     ratio(med(entry, "sync", "seconds"), floor),
                     cell(entry, "sync", "peak_rss_mb", ".0f", limit), cached,
                     max_load(entry, "sync")])
    return rows


def markdown(report: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    args, sizes, limit = report["args"], report["sizes"], report["load_limit"]
    sections: dict[str, dict[str, Entry]] = report["sections"]
    emb, rep, real = (sections.get(k, {}) for k in ("embedded", "replay", "real"))
    lines = [
        f"# Side-by-side benchmark, {report['date']}",
        "",
        "Every contender runs in its own process, one after the other, against the same "
        f"server, over loopback. Medians of {args['repeats']} runs (min-max); {MARK}: a run "
        f"began above a 1-minute load of {limit} (the load column is the highest at a "
        "run's start). Sync paths: LIST is resourceVersion 0, which both servers answer "
        "whole whatever the limit; paged LIST is resourceVersion \"\" with limit "
        f"{sizes.get('embedded', {}).get('page_size', 500)}; watch-list is a watch with "
        "sendInitialEvents. The floor is urllib3 and orjson with no cache: the ratio to it "
        "is the price of the library.",
        "",
        *handoff_lines(report),
    ]
    if emb:
        e = sizes["embedded"]
        pods = args["pods"]
        lines += [
            f"## Embedded API server: {pods:,} pods of {e['pod_bytes']:,} B of JSON "
            f"(one LIST: {e['list_bytes'] / 1e6:,.0f} MB; paged: {e['pages']} pages)",
            "",
            "S1 initial sync into an informer with a namespace index and one counting "
            "handler; bytes/object is the RSS after a GC minus the RSS before, per pod.",
            "",
            *table(["Variant", "sync s", "/ floor", "peak RSS MB", "bytes/object",
                    "load"], s1_rows(emb, pods, limit)),
            "",
            f"S2: then {args['events']:,} mixed changes (create, update, update, delete) as "
            f"fast as the server makes them ({args['model_events']:,} for the contenders "
            f"that build models); latency: {args['latency_events']:,} more at "
            f"{args['rate']:,.0f}/s, from the server's write to the handler.",
            "",
        ]
        floor = med(emb.get("floor/list"), "throughput", "events_per_second")
        rows = [[x["label"], cell(x, "throughput", "events_per_second", ",.0f", limit),
                 ratio(med(x, "throughput", "events_per_second"), floor),
                 cell(x, "latency", "latency_p50_ms", ".1f", limit),
                 cell(x, "latency", "latency_p99_ms", ".1f", limit)]
                for x in emb.values() if "throughput" in x]
        lines += [*table(["Variant", "events/s", "/ floor", "p50 ms", "p99 ms"], rows), ""]
        rows = [[x["label"], cell(x, "fanout", "events_per_second", ",.0f", limit)]
                for x in emb.values() if "fanout" in x]
        if rows:
            lines += [f"S3: {args['fanout_events']:,} mixed changes to 100 pods, "
                      f"{args['handlers']} handlers (events/s per handler).", "",
                      *table(["Variant", "events/s per handler"], rows), ""]
        go_t = med(emb.get("client-go/list"), "transform", "bytes_per_object", pods)
        rows = [[x["label"], cell(x, "transform", "bytes_per_object", ",.0f", limit, pods),
                 ratio(med(x, "transform", "bytes_per_object", pods), go_t)]
                for x in emb.values() if "transform" in x]
        if rows:
            lines += ["S6: S1 with managedFields dropped: by a transform after decoding, or "
                      "(where the label says so) skipped while decoding.", "",
                      *table(["Variant", "bytes/object", "/ client-go"], rows), ""]
    if rep:
        r = sizes["replay"]
        floor = med(rep.get("floor/list"), "throughput", "events_per_second")
        rows = []
        for x in rep.values():
            one = med(x, "throughput", "events_per_second")
            many = med(x, "fanout", "events_per_second")
            rows.append([x["label"], cell(x, "throughput", "events_per_second", ",.0f", limit),
                         ratio(one, floor), cell(x, "fanout", "events_per_second", ",.0f",
                                                 limit), ratio(many, one)])
        lines += [
            f"## Replay source: {r['pods']:,} pods, then {r['events']:,} changes of "
            f"{r['pod_bytes']:,} B at socket speed",
            "",
            f"S2 (one handler) and S3 ({args['handlers']} handlers, events/s per handler).",
            "",
            *table(["Variant", "S2 events/s", "S2 / floor", "S3 events/s per handler",
                    "S3 / S2"], rows),
            "",
        ]
    if real:
        s = sizes["real"]
        lines += [
            f"## Real kube-apiserver + etcd: {args['real_pods']:,} pods of {s['pod_bytes']:,} "
            f"B of JSON (one LIST: {s['list_bytes'] / 1e6:,.0f} MB; paged: {s['pages']} "
            "pages)",
            "",
            *table(["Variant", "sync s", "/ floor", "peak RSS MB", "bytes/object", "load"],
                   s1_rows(real, args["real_pods"], limit)),
            "",
        ]
        lines += delivery_table(real, limit)
    elif "real_skipped" in report:
        lines += [f"Real kube-apiserver: not run ({report['real_skipped']}).", ""]
    lines += local_tables(sections.get("local", {}), args, limit)
    lines += ["## Targets (issue 20)", "", *targets(report)]
    return "\n".join(lines) + "\n"


def delivery_table(real: dict[str, Entry], limit: float) -> list[str]:
    """The real server's own delivery of each path's initial data (the ``wire`` rows)."""
    json_list = med(real.get("wire/list"), "delivery", "seconds")
    rows = [[x["label"], cell(x, "delivery", "seconds", ".2f", limit),
             f"{(med(x, 'delivery', 'bytes') or 0) / 1e6:,.0f}",
             ratio(med(x, "delivery", "seconds"), json_list)]
            for x in real.values() if "delivery" in x]
    if not rows:
        return []
    return ["The server's own delivery: seconds from the request to the last byte of a "
            "path's initial data (a LIST's body; a watch-list's initial events, up to the "
            "bookmark that ends them), read 1 MiB at a time with nothing decoded. No client "
            "syncs faster on that path in that encoding.", "",
            *table(["Variant", "seconds", "MB", "/ JSON LIST"], rows), ""]


S4_METRICS = ("add_per_second", "update_per_second", "namespace_lookups_per_second",
              "index_lookups_per_second", "selector_lists_per_second")


def local_tables(local: dict[str, Entry], args: dict[str, Any], limit: float) -> list[str]:
    lines: list[str] = []
    go = local.get("client-go")
    rows = [[x["label"], *(cell(x, "s4", m, ",.0f", limit) for m in S4_METRICS),
             ratio(med(x, "s4", "namespace_lookups_per_second"),
                   med(go, "s4", "namespace_lookups_per_second"))]
            for x in local.values() if "s4" in x]
    if rows:
        lines += [f"## No server: S4 indexer and lister ({args['objects']:,} pods, 100 "
                  "namespaces, 500 nodes; kubernetes.informer's cache has no index, so it "
                  "scans), S5 workqueue", "",
                  *table(["Contender", "add/s", "update/s", "namespace lookups/s",
                          "node-index lookups/s", "selector lists/s",
                          "namespace lookups / client-go"], rows), ""]
    rows = [[x["label"], cell(x, "s5", "workers_1_per_second", ",.0f", limit),
             cell(x, "s5", "workers_8_per_second", ",.0f", limit)]
            for x in local.values() if "s5" in x]
    if rows:
        lines += [f"S5: {args['keys']:,} keys through add, get, done, 1 and 8 workers.", "",
                  *table(["Contender", "1 worker/s", "8 workers/s"], rows), ""]
    return lines


def handoff_lines(report: dict[str, Any]) -> list[str]:
    """The machine's thread hand-off round trips, when the run measured them."""
    probes = report.get("handoff_us")
    if not probes:
        return []
    said = "; ".join(f"{p['us']:,.0f} us {when}" for when, p in probes.items())
    return ["The machine: a round trip between two Python threads waking each other "
            f"through locks took {said} (`bench/machine.py`; every thread hand-off of an "
            "informer pays for it).", ""]


def handler_cost_us(one: float | None, many: float | None, handlers: int) -> float | None:
    """What each handler beyond the first added to an event, in microseconds, from the
    events/s to one handler (``one``) and per handler with ``handlers`` (``many``)."""
    if not one or not many or handlers < 2:
        return None
    return (1 / many - 1 / one) / (handlers - 1) * 1e6


def targets(report: dict[str, Any]) -> list[str]:
    """Issue 20's targets, each with the measured figure, met or missed (by how much)."""
    sections = report["sections"]
    emb, rep, real, local = (sections.get(k, {}) for k in ("embedded", "replay", "real",
                                                            "local"))
    pods = report["args"]["pods"]
    lines: list[str] = []

    def check(text: str, value: float | None, goal: float, higher_is_better: bool,
              unit: str = "x") -> None:
        if value is None:
            lines.append(f"- {text}: not measured in this run")
            return
        met = value >= goal if higher_is_better else value <= goal
        sign = ">=" if higher_is_better else "<="
        verdict = "met" if met else (f"missed by {goal / value:.2f}x" if higher_is_better
                                     else f"missed by {value / goal:.2f}x")
        lines.append(f"- {text}: {value:,.2f}{unit} (target {sign} {goal:,.2f}{unit}): "
                     f"{verdict}")

    def over(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else a / b

    cc_real = med(real.get("cc-dict/list"), "sync", "seconds")
    check("S1 real apiserver, client_cache dicts (LIST) / floor",
          over(cc_real, med(real.get("floor/list"), "sync", "seconds")), 1.2, False)
    check("S1 real apiserver, client_cache dicts watch-list / LIST",
          over(med(real.get("cc-dict/watch-list"), "sync", "seconds"), cc_real), 1.0, False)
    floor_paths = over(med(real.get("floor/watch-list"), "sync", "seconds"),
                       med(real.get("floor/list"), "sync", "seconds"))
    if floor_paths is not None:  # what the server itself charges for the streamed list
        lines.append(f"  - beside it, the floor's own watch-list / LIST on the same server: "
                     f"{floor_paths:.2f}x")
    cc_protobuf = med(real.get("cc-dict/list/protobuf"), "sync", "seconds")
    paths = over(med(real.get("cc-dict/watch-list/protobuf"), "sync", "seconds"), cc_protobuf)
    if paths is not None:  # the same informer asking for protobuf (not the target's rows)
        lines.append(f"  - beside it, client_cache dicts asking for protobuf, watch-list / "
                     f"LIST: {paths:.2f}x")
    json_list = med(real.get("wire/list"), "delivery", "seconds")
    sent = over(med(real.get("wire/watch-list"), "delivery", "seconds"), json_list)
    if sent is not None:
        lines.append(f"  - beside it, the server's own delivery of the JSON watch-list / its "
                     f"JSON LIST, nothing decoded: {sent:.2f}x")
    go_protobuf = med(real.get("client-go/list/protobuf"), "sync", "seconds")
    # like for like: both ask for protobuf (client-go's typed clients' default)
    check("S1 real apiserver, client_cache structs asking for protobuf (LIST) / client-go "
          "protobuf (LIST)",
          over(med(real.get("cc-struct/list/protobuf"), "sync", "seconds"), go_protobuf), 1.0,
          False)
    struct_json = over(med(real.get("cc-struct/list"), "sync", "seconds"), go_protobuf)
    if struct_json is not None:
        lines.append(f"  - beside it, client_cache structs reading JSON (LIST) / client-go "
                     f"protobuf (LIST): {struct_json:.2f}x")
    sent = over(json_list, go_protobuf)
    if sent is not None:
        lines.append(f"  - beside it, the server's delivery of the JSON LIST alone, nothing "
                     f"decoded / client-go's protobuf sync: {sent:.2f}x")
    check("S2 replay, client_cache dicts, one handler",
          med(rep.get("cc-dict/list"), "throughput", "events_per_second"), 40_000, True,
          " events/s")
    handlers = report["args"]["handlers"]
    one = med(rep.get("cc-dict/list"), "throughput", "events_per_second")
    many = med(rep.get("cc-dict/list"), "fanout", "events_per_second")
    check(f"S3 replay, client_cache dicts, per-handler rate with {handlers} handlers / one "
          "handler's", over(many, one), 0.8, True)
    cost = handler_cost_us(one, many, handlers)
    if cost is not None:
        lines.append(f"  - beside it, each handler beyond the first added {cost:.1f} us an "
                     f"event (0.8x needs {handler_cost_us(one, 0.8 * one, handlers):.1f} us "
                     "or less)")
    check("Memory per cached pod (embedded S1), client_cache dicts / client-go",
          over(med(emb.get("cc-dict/list"), "sync", "bytes_per_object", pods),
               med(emb.get("client-go/list"), "sync", "bytes_per_object", pods)), 1.1, False)
    check("Memory per cached pod (embedded S1), client_cache structs / client-go",
          over(med(emb.get("cc-struct/list"), "sync", "bytes_per_object", pods),
               med(emb.get("client-go/list"), "sync", "bytes_per_object", pods)), 0.6, False)
    check("Peak RSS during the embedded sync / steady state, client_cache dicts",
          med(emb.get("cc-dict/list"), "sync", "peak_over_steady"), 2.0, False)
    check("Workqueue add/get/done, one worker",
          med(local.get("cc-dict"), "s5", "workers_1_per_second"), 300_000, True, "/s")
    check("Namespace-index lookups, client_cache / client-go",
          over(med(local.get("cc-dict"), "s4", "namespace_lookups_per_second"),
               med(local.get("client-go"), "s4", "namespace_lookups_per_second")), 1.0, True)
    idle = Path(__file__).resolve().parent / "results" / "idle.json"
    lines.append(f"- Idle CPU: measured by bench/bench_idle.py ({idle.name}), not here")
    return lines


def chart(report: dict[str, Any], path: Path) -> None:
    """A PNG: S1 seconds on the embedded server and S2 events/s from the replay source."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no chart: matplotlib is not installed (pip install -e '.[bench]')",
              file=sys.stderr)
        return
    sections = report["sections"]
    panels = [("embedded", "sync", "seconds",
               f"S1: seconds to sync {report['args']['pods']:,} pods, embedded server "
               "(lower is better)"),
              ("replay", "throughput", "events_per_second",
               "S2: events/s to one handler from the replay source (higher is better)")]
    panels = [p for p in panels if sections.get(p[0])]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 7), squeeze=False)
    for ax, (section, scenario, metric, title) in zip(axes[0], panels, strict=True):
        entries = [x for x in sections[section].values() if scenario in x]
        got = [values(x, scenario, metric) for x in entries]
        medians = [statistics.median(v) for v in got]
        err = [[m - min(v) for m, v in zip(medians, got, strict=True)],
               [max(v) - m for m, v in zip(medians, got, strict=True)]]
        colors = ["#2a7ab9" if "client_cache" in x["label"] else
                  "#7f7f7f" if "client-go" in x["label"] else
                  "#4a9a4a" if "floor" in x["label"] else "#d98c3f" for x in entries]
        ax.barh([x["label"] for x in entries], medians, xerr=err, color=colors, capsize=3)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="y", labelsize=7)
        for y, value in enumerate(medians):
            ax.text(value, y, f" {value:,.1f}" if value < 100 else f" {value:,.0f}",
                    va="center", fontsize=7)
    fig.suptitle(f"client_cache side-by-side benchmark, {report['date']} "
                 f"(medians of {report['args']['repeats']} runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"chart: {path}", flush=True)


if __name__ == "__main__":  # re-render the Markdown from a saved report
    print(markdown(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
