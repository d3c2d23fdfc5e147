"""The containers a trace comes in: the systrace HTML report (:func:`wrap_html`) and a
JS-escaped ``linuxPerfData`` string (:func:`wrap_linux_perf_data`)."""

from __future__ import annotations


def wrap_html(text: str, json_block: bool = True) -> str:
    """Embed trace text in a systrace-style HTML page (optionally after a JSON block)."""
    parts = [
        '<!DOCTYPE html>\n<html>\n<head i18n-values="dir:textdirection;">\n'
        '<meta charset="utf-8"/>\n<title>Android System Trace</title>\n'
        "<script>var x = 1 - 2; /* <idle>-0 [001] not a trace line */</script>\n"
        "</head>\n<body>\n"
    ]
    if json_block:
        parts.append(
            '  <script class="trace-data" type="application/text">\n'
            '{"traceEvents": [], "systemTraceEvents": ""}\n  </script>\n'
        )
    parts.append('  <script class="trace-data" type="application/text">\n')
    parts.append(text)
    parts.append("  </script>\n</body>\n</html>\n")
    return "".join(parts)


def wrap_linux_perf_data(text: str, escape: bool = True) -> str:
    """Embed trace text as the older ``systrace.py`` did: a JavaScript string literal
    ``var linuxPerfData = "…";`` with one trace line per source line, each ending in an
    escaped line end and a line continuation (``\\n\\``). ``escape=False`` leaves
    backslashes and quotes as they are (old systrace.py did not escape them)."""
    if escape:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(line + "\\n\\\n" for line in text.splitlines())
    return (
        '<!DOCTYPE html>\n<html>\n<head i18n-values="dir:textdirection;">\n'
        "<title>Android System Trace</title>\n"
        '<script language="javascript">function onLoad(){reload()}function reload(){'
        'if(linuxPerfData){var g=new tracing.TimelineModel;g.importEvents("[]",!0,'
        "[linuxPerfData])}}</script>\n</head>\n<body>\n"
        "  <div class=\"view\">\n  </div>\n  <script>\n  'use strict';\n"
        '  var linuxPerfData = "\\\n' + body + '         \\n";\n  </script>\n</body>\n</html>\n'
    )
