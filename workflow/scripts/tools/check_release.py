"""The release's metadata, checked before `make release` tags anything (the Python standard library only: the release
runs with the system's python3):

- no CHANGE-ME placeholder left in CITATION.cff (repository-code, where the code is published) or .zenodo.json;
- CITATION.cff's version, .zenodo.json's and pyproject.toml's agree, as do preferred-citation's version;
- CITATION.cff's date-released is the release's date (today, UTC, or --date), and .zenodo.json's publication_date
  is the same; preferred-citation's year is its year;
- both licences are named: MIT (the code) and CC-BY-4.0 (the data and the paper), in CITATION.cff and .zenodo.json.

    python3 workflow/scripts/tools/check_release.py [--root .] [--date YYYY-MM-DD]

Exits non-zero naming every problem, each with what to change.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import tomllib
from pathlib import Path

PLACEHOLDER = "CHANGE-ME"
LICENCES = ("MIT", "CC-BY-4.0")


def cff_fields(text: str) -> dict:
    """The top-level scalars of a CITATION.cff and its license list, and preferred-citation's scalars under
    'preferred-citation.<key>' (a reader of the few keys checked here, so that no YAML package is needed)."""
    fields, block, licences = {}, None, []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        top = re.match(r"^([A-Za-z][\w-]*):\s*(.*)$", line)
        if top:
            block = top.group(1)
            value = top.group(2).strip().strip('"').strip("'")
            if value:
                fields[block] = value
                if block == "license":
                    licences.append(value)
            continue
        item = re.match(r"^  - (\S.*)$", line)
        if item and block == "license":
            licences.append(item.group(1).strip().strip('"'))
        sub = re.match(r"^  ([A-Za-z][\w-]*):\s*(.+)$", line)
        if sub and block == "preferred-citation":
            fields[f"preferred-citation.{sub.group(1)}"] = sub.group(2).strip().strip('"').strip("'")
    fields["license"] = licences
    return fields


def problems(root: Path, today: str) -> list:
    out = []
    cff_text = (root / "CITATION.cff").read_text()
    zen_text = (root / ".zenodo.json").read_text()
    cff, zen = cff_fields(cff_text), json.loads(zen_text)
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    for name, text in (("CITATION.cff", cff_text), (".zenodo.json", zen_text)):
        lines = [ln.strip() for ln in text.splitlines() if PLACEHOLDER in ln and not ln.lstrip().startswith("#")]
        if lines:
            out.append(f"{name} still holds the {PLACEHOLDER} placeholder ({'; '.join(lines)}): set the address "
                       f"where the code is published (CITATION.cff's repository-code, and the same address in "
                       f".zenodo.json's related_identifiers), and commit")
    if not cff.get("repository-code"):
        out.append("CITATION.cff has no repository-code: the address where the code is published")
    for name, v in (("CITATION.cff version", cff.get("version")), (".zenodo.json version", zen.get("version")),
                    ("CITATION.cff preferred-citation version", cff.get("preferred-citation.version"))):
        if v != version:
            out.append(f"{name} is {v!r}, pyproject.toml's version is {version!r}: make them one")
    if cff.get("date-released") != today:
        out.append(f"CITATION.cff's date-released is {cff.get('date-released')!r}, the release's date is {today}: "
                   f"set date-released: \"{today}\" (and .zenodo.json's publication_date), and commit")
    if zen.get("publication_date") != cff.get("date-released"):
        out.append(f".zenodo.json's publication_date {zen.get('publication_date')!r} is not CITATION.cff's "
                   f"date-released {cff.get('date-released')!r}")
    if cff.get("preferred-citation.year") != today[:4]:
        out.append(f"CITATION.cff's preferred-citation year is {cff.get('preferred-citation.year')!r}, the release's "
                   f"is {today[:4]}")
    missing = [lic for lic in LICENCES if lic not in cff["license"]]
    if missing:
        out.append(f"CITATION.cff's license lacks {missing}: the code is MIT, the data and the paper CC-BY-4.0")
    zen_all = " ".join(str(zen.get(k, "")) for k in ("license", "notes", "description"))
    missing = [lic for lic in LICENCES if lic not in zen_all]
    if missing:
        out.append(f".zenodo.json names no {missing} licence (license, notes)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
                    help="the release's date (default: today, UTC)")
    a = ap.parse_args(argv)
    found = problems(a.root, a.date)
    for p in found:
        print(f"release: {p}", file=sys.stderr)
    if not found:
        print("release: the metadata is ready (CITATION.cff, .zenodo.json, pyproject.toml)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
