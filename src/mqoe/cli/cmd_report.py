"""``mqoe report OUT_DIR``: the reproductions under OUT_DIR as one self-contained HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "write a static HTML report of reproductions (figures, published vs simulated, runs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write one self-contained HTML file (figures embedded, no network needed) for a "
        "reproduction folder or a folder of them, as `mqoe reproduce all --out DIR` writes."
    )
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="reproduction folder(s)")
    parser.add_argument(
        "--works", nargs="+", default=None, metavar="WORK", help="only these works (folder names)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="the HTML file (default: OUT_DIR/report.html)",
    )
    parser.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        metavar="PNG",
        help="also open the report in headless Chromium, save a screenshot of its top, "
        "and exit 1 on a console error or a figure that does not decode",
    )


def run(args: argparse.Namespace) -> int:
    from mqoe.cli.console import check_output_file, err, out
    from mqoe.report import build_report, write_report

    # Outputs first: a page (and a screenshot) that cannot be written fails in a moment,
    # not after every figure has been read and encoded.
    if args.output is not None:
        check_output_file(args.output, "--output")
    if args.screenshot is not None:
        check_output_file(args.screenshot, "--screenshot")
    report = build_report(args.out_dir, args.works)
    output = args.output if args.output is not None else args.out_dir / "report.html"
    check_output_file(output, "--output" if args.output is not None else "OUT_DIR")
    write_report(report, output)
    for problem in report.problems:
        err.print(f"mqoe report: warning: {problem}", markup=False)
    count = len(report.reproductions)
    noun = "reproduction" if count == 1 else "reproductions"
    out.print(
        f"wrote {output} ({len(report.html) / 1e6:.1f} MB: {count} {noun}, "
        f"{report.figure_count} figures)",
        markup=False,
    )
    if args.screenshot is not None:
        from mqoe.report.browser import check_page

        page = check_page(output, screenshot=args.screenshot)
        out.print(f"wrote {args.screenshot} (headless Chromium)", markup=False)
        # The screenshot doubles as a check of the real report (make demo runs it in CI).
        broken = [i["alt"] for i in page.images if not i["decoded"]]
        for message in page.errors:
            err.print(f"mqoe report: browser console error: {message}", markup=False)
        if broken:
            err.print(
                f"mqoe report: figures that did not decode: {', '.join(broken)}", markup=False
            )
        if page.errors or broken or len(page.images) != report.figure_count:
            return 1
    return 0
