"""Reads deploy-gate's CI outputs with real consumers, for tests/ci_outputs.rs.

    python3 tests/ci_check.py junit FILE     -> JSON: the counts, each case and the properties
                                                as junitparser (a JUnit XML library) reads them
    python3 tests/ci_check.py markdown FILE  -> JSON: the template table's rows (cells as text),
                                                every table's rows by its first header cell, and
                                                every HTML tag, as markdown-it (CommonMark with
                                                GFM tables) parses the summary
"""
import json
import sys


def junit(path):
    from junitparser import Error, Failure, JUnitXml, Skipped

    xml = JUnitXml.fromfile(path)
    suites = list(xml)
    cases = []
    for suite in suites:
        for case in suite:
            kinds = []
            for r in case.result:
                kinds.append("failure" if isinstance(r, Failure) else "error" if isinstance(r, Error) else "skipped" if isinstance(r, Skipped) else "other")
            cases.append({"classname": case.classname, "name": case.name, "results": kinds, "messages": [r.message for r in case.result]})
    suite = suites[0]
    return {
        "suites": len(suites),
        "name": suite.name,
        "tests": suite.tests,
        "failures": suite.failures,
        "errors": suite.errors,
        "skipped": suite.skipped,
        "total": {"tests": xml.tests, "failures": xml.failures, "errors": xml.errors},
        "properties": {p.name: p.value for p in suite.properties()},
        "cases": cases,
    }


def markdown(path):
    from markdown_it import MarkdownIt

    text = open(path, encoding="utf-8").read()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    html = [t.content for t in tokens if t.type == "html_block"]
    # Anything that is markup in the output: tags, links and images anywhere; in the template
    # table, anything but plain text.
    for t in tokens:
        for child in t.children or []:
            if child.type in ("html_inline", "link_open", "image"):
                html.append(f"{child.type}:{child.content}")
    rows, row, in_table, header = [], None, False, None
    tables = {}
    for t in tokens:
        if t.type == "table_open":
            in_table, header = True, None
        elif t.type == "table_close":
            in_table = False
        elif in_table and t.type == "tr_open":
            row = []
        elif in_table and t.type == "tr_close":
            if header is None:
                header = row
                tables.setdefault(header[0] if header else "", [])
            else:
                tables[header[0] if header else ""].append(row)
                if header and header[0] == "template":
                    rows.append(row)
        elif in_table and t.type == "inline":
            row.append("".join(c.content for c in t.children or [] if c.type == "text"))
            for child in t.children or []:
                if child.type != "text":
                    html.append(f"{child.type}:{child.content}")
    return {"template_rows": rows, "tables": tables, "html": html}


if __name__ == "__main__":
    kind, path = sys.argv[1], sys.argv[2]
    print(json.dumps(junit(path) if kind == "junit" else markdown(path)))
