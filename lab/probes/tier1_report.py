"""What the two-tier detector's tier 1 filters out of prepared splits, and how often a gold span overlaps a
filtered sentence (a tier-1 error: the detector can never flag that sentence).

    python lab/probes/tier1_report.py PREPARED_DIR/train.jsonl PREPARED_DIR/dev.jsonl [--json OUT.json]

Prints one Markdown table per file (rule, sentences filtered, of them with a gold span, examples).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.detectors.twotier.tier1 import tier1_report


def markdown(name: str, report: dict) -> str:
    share = report["filtered"] / report["sentences"] if report["sentences"] else 0.0
    gold = report["gold_chars_in_filtered"] / report["gold_chars"] if report["gold_chars"] else 0.0
    lines = [f"{name}: {report['responses']} responses, {report['sentences']} sentences; tier 1 filtered "
             f"{report['filtered']} ({share:.1%}), {report['filtered_with_gold_span']} of them overlap a gold span "
             f"({report['error_rate'] or 0:.1%}); gold characters inside filtered sentences: "
             f"{report['gold_chars_in_filtered']} of {report['gold_chars']} ({gold:.2%})", "",
             "| rule | filtered | with a gold span | example | error example |", "|---|---:|---:|---|---|"]
    for rule, entry in report["by_rule"].items():
        example = (entry["examples"] or [""])[0].replace("|", "\\|")
        error = (entry["error_examples"] or [""])[0].replace("|", "\\|")
        lines.append(f"| {rule} | {entry['filtered']} | {entry['with_gold_span']} | {example} | {error} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="Prepared split files (JSONL with gold spans).")
    parser.add_argument("--json", type=Path, default=None, help="Also write every report as JSON here.")
    args = parser.parse_args()
    reports = {}
    for path in args.files:
        reports[str(path)] = tier1_report(read_records(path))
        print(markdown(path.name, reports[str(path)]), end="\n\n")
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
