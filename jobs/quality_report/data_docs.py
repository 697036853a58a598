"""The Data Docs site: rebuilt from every stored Great Expectations result, made to work offline.

Great Expectations' pages load jQuery, Bootstrap, Vega and fonts from public CDNs, and a
logo that reports the project's id to GX. Servers that run pipelines often have no way
out, so after each build the CDN files are copied into the site (from the cache that
infra/datadocs/fetch.py fills, with its manifest) and every page points at the copies.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from jobs.lake import fs
from jobs.lake.layout import Locations, is_s3, join
from jobs.lake.locks import FolderLock
from jobs.settings import settings
from jobs.validate import gx
from jobs.validate.validation import site_folder

VENDOR = "static/vendor"
# The logo URL carries a timestamp and the project's id: use the copy GX ships in the site.
_LOGO = re.compile(r"https://great-expectations-web-assets\.s3\.[a-z0-9-]+\.amazonaws\.com/logo-long\.png[^\"']*")
# GX links the favicon one folder too high from validation pages.
_FAVICON = re.compile(r'"(?:\.\./)*static/images/favicon\.ico"')
# Subresource-integrity and CORS attributes make browsers refuse the copies over file://.
_VENDORED_TAG = re.compile(r"<(?:script|link)\b[^>]*static/vendor/[^>]*>")
_SRI = re.compile(r'\s(?:integrity|crossorigin)="[^"]*"')


class AssetsMissing(RuntimeError):
    """The asset cache is empty: the set-up has not fetched it."""


def _assets(cache: Path) -> dict[str, str]:
    """CDN URL -> the vendored file's path inside the site, from the cache's manifest."""
    manifest = json.loads((cache / "manifest.json").read_text())
    return {
        url: f"{VENDOR}/{package.replace('/', '__')}/{name}"
        for package, urls in manifest["packages"].items()
        for url, name in urls.items()
        if url
    }


# GX calls a validation with any failed expectation "Failed", and one with none "Succeeded";
# ours is "warned" when only `warn` checks failed (expectations, or the run report's checks,
# which GX does not see), and the report and the Airflow task say so.
_FAILED_STATUS = '<i class="fas fa-times text-danger" aria-hidden="true"></i> Failed'
_SUCCEEDED_STATUS = '<i class="fas fa-check-circle text-success" aria-hidden="true"></i> Succeeded'
_WARNED_STATUS = (
    '<i class="fas fa-exclamation-triangle text-warning" aria-hidden="true"></i> Warned (only `warn` checks failed)'
)
_INDEX_ROW = "{'validation_success'"
# GX renders a percentage of no rows as NaN%.
_NAN_SHARE = re.compile(r">NaN%[^<]*<")


def _in_our_words(page: str, text: str, warned_pages: set[str]) -> str:
    """A page of the site (`page`, relative to it) in the report's vocabulary: warned
    validations say "Warned", on their pages and their rows in the index, not "Failed";
    an empty table's shares say "no rows", not "NaN%"."""
    if page in warned_pages:
        text = text.replace(_FAILED_STATUS, _WARNED_STATUS).replace(_SUCCEEDED_STATUS, _WARNED_STATUS)
    if page == "index.html":
        for warned in warned_pages:
            at = text.find(f"'_table_row_link_path': '{warned}'")
            start, end = text.rfind(_INDEX_ROW, 0, at), text.find("}", at)
            if at >= 0 and start >= 0:
                row = text[start:end]
                for icon in ("fa-times text-danger ge-failed-icon", "fa-check-circle text-success ge-success-icon"):
                    row = row.replace(icon, "fa-exclamation-triangle text-warning")
                for said in ("Failed", "Succeeded"):
                    row = row.replace(f"'_validation_success_text': '{said}'", "'_validation_success_text': 'Warned'")
                text = text[:start] + row + text[end:]
    return _NAN_SHARE.sub(">no rows<", text) if page.startswith("validations/") else text


def finish_pages(site: Path, warned_pages: set[str] = frozenset()) -> int:
    """One pass over the site's pages: our vocabulary (`_in_our_words`), and the vendored
    assets copied in with every page pointing at them; returns the pages changed.

    Raises AssetsMissing (the vocabulary done) when there are no assets to copy."""
    cache = settings().datadocs_assets_dir
    assets = _assets(cache) if (cache / "manifest.json").is_file() else None
    if assets is not None:
        shutil.copytree(cache, site / VENDOR, dirs_exist_ok=True, ignore=shutil.ignore_patterns("manifest.json"))
    changed = 0
    for page in site.rglob("*.html"):
        relative = page.relative_to(site)
        text = page.read_text()
        new = _in_our_words(relative.as_posix(), text, warned_pages)
        if assets is not None:
            to_root = "../" * (len(relative.parts) - 1)
            new = _LOGO.sub(f"{to_root}static/images/logo-long.png", new)
            new = _FAVICON.sub(f'"{to_root}static/images/favicon.ico"', new)
            for url, local in assets.items():
                new = new.replace(f'"{url}"', f'"{to_root}{local}"')
            new = _VENDORED_TAG.sub(lambda tag: _SRI.sub("", tag.group(0)), new)
        if new != text:
            page.write_text(new)
            changed += 1
        page.chmod(fs.PRIVATE_MODE)  # Great Expectations writes them as any file: they hold samples
    if assets is None:
        raise AssetsMissing(
            f"{cache.resolve()} has no assets: run `make assets` (infra/datadocs/fetch.py) for an offline Data Docs site"
        )
    return changed


def build(locations: Locations, warned_pages: set[str] = frozenset()) -> str:
    """Rebuilds the site from every stored result; returns its index page.

    Raises AssetsMissing (after building) when the site still links CDNs.
    """
    site, folder = join(locations.reports, "data_docs"), site_folder(locations)
    with FolderLock(locations.quality):
        gx.context(locations.quality, folder).build_data_docs(site_names=[gx.DATA_DOCS_SITE])
        try:
            finish_pages(folder, warned_pages)
        finally:
            if is_s3(site):
                fs.copy_tree(folder, site)
    return join(site, "index.html")
