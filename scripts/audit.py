"""``make audit``: known vulnerabilities in what PEDL installs and ships.

- Python: every distribution installed in the environment this script runs in (``.venv``, made
  from pyproject.toml's pins and extras), through pip-audit and PyPI's vulnerability data;
  the editable installs (PEDL itself, compat/determined) are ours and skipped.
- The web UI: the packages locked in ``ui/package-lock.json``, through ``npm audit``.

A finding fails the audit (exit status 1) unless ``audit-allowlist.toml`` accepts it, by one
of its ids (an advisory's id or any alias: ``GHSA-…``, ``PYSEC-…``, ``CVE-…``, or npm's
advisory number) for that package, with a reason; an entry without a reason is itself an
error, and one that matches nothing is reported as stale.

What could not be audited is said, never passed over silently: a dependency whose
vulnerability data PyPI does not give out (pip-audit asks for each installed version;
where that answer is not reachable, the project's own page gives the data of its latest
release, which is used for a dependency installed at that release, and the others are listed
as not audited), and npm's audit service when the registry refuses it. With ``--require``
(``make audit AUDIT_REQUIRED=1``) anything not audited fails the audit too.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pip._internal.models.index import PyPI  # the index pip-audit asks, as pip names it

ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = ROOT / "audit-allowlist.toml"
UI = ROOT / "ui"
NOT_ON_PYPI = "Dependency not found on PyPI"


@dataclass(frozen=True)
class Finding:
    ecosystem: str  # "python" or "npm"
    package: str
    version: str
    ids: tuple[str, ...]  # the advisory's id first, then its aliases
    summary: str
    fixed_in: str

    def line(self) -> str:
        fix = f"; fixed in {self.fixed_in}" if self.fixed_in else "; no fixed version"
        return f"{self.package} {self.version}: {', '.join(self.ids)}: {self.summary}{fix}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    not_audited: list[str] = field(default_factory=list)
    audited: int = 0


@dataclass(frozen=True)
class Allowed:
    ecosystem: str
    package: str
    id: str
    reason: str


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def load_allowlist(path: Path) -> list[Allowed]:
    """The accepted findings; a malformed entry (no id, package or reason) is an error."""
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text())
    allowed: list[Allowed] = []
    for ecosystem in ("python", "npm"):
        for number, entry in enumerate(data.get(ecosystem, []), 1):
            missing = [k for k in ("id", "package", "reason") if not str(entry.get(k, "")).strip()]
            if missing:
                raise SystemExit(
                    f"{path.name}: [[{ecosystem}]] entry {number} lacks {', '.join(missing)}"
                )
            allowed.append(
                Allowed(ecosystem, _normalize(entry["package"]), entry["id"], entry["reason"])
            )
    unknown = set(data) - {"python", "npm"}
    if unknown:
        raise SystemExit(f"{path.name}: unknown tables {sorted(unknown)} (python, npm)")
    return allowed


def _get_json(url: str, timeout: float = 30) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def _latest_release_vulns(name: str, version: str) -> tuple[list[dict[str, Any]] | None, str]:
    """PyPI's vulnerability records of ``name`` at ``version`` from the project's page, which
    gives those of its latest release only: (None, why) where ``version`` is not that one."""
    try:
        project = _get_json(f"{PyPI.pypi_url}/{name}/json")
    except (urllib.error.URLError, TimeoutError, ValueError) as error:
        return None, f"PyPI's project page did not answer ({error})"
    latest = project["info"]["version"]
    if latest != version:
        return None, f"installed {version}, PyPI's latest {latest}"
    return project.get("vulnerabilities") or [], ""


def audit_python() -> Report:
    report = Report()
    command = [sys.executable, "-m", "pip_audit", "--format", "json", "--skip-editable"]
    command += ["--progress-spinner", "off", "--timeout", "30"]
    result = subprocess.run(command, capture_output=True, text=True)
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        report.not_audited.append(
            f"pip-audit failed ({result.returncode}): {result.stderr[-2000:]}"
        )
        return report
    versions = {_normalize(d.metadata["Name"]): d.version for d in metadata.distributions()}
    unanswered: list[tuple[str, str]] = []
    for dependency in answer["dependencies"]:
        name = _normalize(dependency["name"])
        version = dependency.get("version") or versions.get(name, "?")
        reason = dependency.get("skip_reason")
        if reason is None:
            report.audited += 1
            for vuln in dependency.get("vulns", []):
                report.findings.append(
                    Finding(
                        "python",
                        name,
                        version,
                        (vuln["id"], *vuln.get("aliases", [])),
                        (vuln.get("description") or "").split("\n")[0][:200],
                        ", ".join(vuln.get("fix_versions", [])),
                    )
                )
        elif reason.startswith(NOT_ON_PYPI):
            unanswered.append((name, version))
        elif "editable" not in reason:
            report.not_audited.append(f"{name} {version}: {reason}")
    # PyPI's answer per installed version unreachable: its project pages, for the latest.
    with ThreadPoolExecutor(8) as pool:
        pages = list(pool.map(lambda nv: _latest_release_vulns(*nv), unanswered))
    for (name, version), (vulns, why) in zip(unanswered, pages, strict=True):
        if vulns is None:
            report.not_audited.append(f"{name}: {why}")
            continue
        report.audited += 1
        for vuln in vulns:
            if vuln.get("withdrawn"):
                continue
            report.findings.append(
                Finding(
                    "python",
                    name,
                    version,
                    (vuln["id"], *vuln.get("aliases", [])),
                    (vuln.get("summary") or vuln.get("details") or "").split("\n")[0][:200],
                    ", ".join(vuln.get("fixed_in", [])),
                )
            )
    return report


def audit_npm() -> Report:
    report = Report()
    if not (UI / "package-lock.json").exists():
        return report
    npm = shutil.which("npm")
    if npm is None:
        report.not_audited.append("ui/package-lock.json: npm is missing (make ui installs it)")
        return report
    result = subprocess.run(
        [npm, "audit", "--json", "--package-lock-only"], cwd=UI, capture_output=True, text=True
    )
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        report.not_audited.append(
            f"npm audit failed ({result.returncode}): {result.stderr[-2000:]}"
        )
        return report
    if "vulnerabilities" not in answer:
        message = answer.get("message") or answer.get("error", {}).get("summary") or answer
        report.not_audited.append(f"ui/package-lock.json: npm audit could not run: {message}")
        return report
    report.audited = int(answer.get("metadata", {}).get("dependencies", {}).get("total", 0))
    seen: set[str] = set()
    for name, entry in sorted(answer["vulnerabilities"].items()):
        for via in entry.get("via", []):
            if not isinstance(via, dict) or via.get("url") in seen:
                continue  # a string: vulnerable through another package, reported there
            seen.add(via.get("url", ""))
            advisory = via.get("url", "").rstrip("/").rsplit("/", 1)[-1]
            ids = tuple(i for i in (advisory, str(via.get("source", ""))) if i)
            fix = entry.get("fixAvailable")
            fixed = f"{fix['name']} {fix['version']}" if isinstance(fix, dict) else str(bool(fix))
            report.findings.append(
                Finding(
                    "npm",
                    via.get("name", name),
                    via.get("range", ""),
                    ids,
                    f"{via.get('severity', '?')}: {via.get('title', '')}",
                    fixed if fix else "",
                )
            )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--require", action="store_true", help="fail when anything could not be audited"
    )
    parser.add_argument("--skip-npm", action="store_true", help="audit the Python side only")
    args = parser.parse_args()
    allowed = load_allowlist(ALLOWLIST)
    used: set[Allowed] = set()
    failed = False
    reports = {"python": audit_python()}
    if not args.skip_npm:
        reports["npm"] = audit_npm()
    for ecosystem, report in reports.items():
        label = "Python (.venv)" if ecosystem == "python" else "npm (ui/package-lock.json)"
        print(f"{label}: {report.audited} packages audited, {len(report.findings)} findings")
        for finding in report.findings:
            accepted = [
                a
                for a in allowed
                if a.ecosystem == ecosystem
                and a.package == _normalize(finding.package)
                and a.id in finding.ids
            ]
            used.update(accepted)
            if accepted:
                print(f"  allowed: {finding.line()}\n    reason: {accepted[0].reason}")
            else:
                failed = True
                print(f"  VULNERABLE: {finding.line()}")
        if report.not_audited:
            print(f"  NOT AUDITED ({len(report.not_audited)}):")
            for line in report.not_audited:
                print(f"    {line}")
            failed = failed or args.require
    for stale in sorted(set(allowed) - used, key=lambda a: (a.ecosystem, a.package)):
        if stale.ecosystem in reports:
            print(f"stale allow-list entry ({ALLOWLIST.name}): {stale.package} {stale.id}")
    if failed:
        print(f"audit failed: upgrade, or accept in {ALLOWLIST.name} with a reason")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
