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


def localize(site: Path) -> int:
    """Copy the vendored assets into `site` and point its pages at them; returns pages changed."""
    cache = settings().datadocs_assets_dir
    if not (cache / "manifest.json").is_file():
        raise AssetsMissing(
            f"{cache.resolve()} has no assets: run `make assets` (infra/datadocs/fetch.py) for an offline Data Docs site"
        )
    shutil.copytree(cache, site / VENDOR, dirs_exist_ok=True, ignore=shutil.ignore_patterns("manifest.json"))
    assets = _assets(cache)
    changed = 0
    for page in site.rglob("*.html"):
        to_root = "../" * (len(page.relative_to(site).parts) - 1)
        text = page.read_text()
        new = _LOGO.sub(f"{to_root}static/images/logo-long.png", text)
        new = _FAVICON.sub(f'"{to_root}static/images/favicon.ico"', new)
        for url, local in assets.items():
            new = new.replace(f'"{url}"', f'"{to_root}{local}"')
        new = _VENDORED_TAG.sub(lambda tag: _SRI.sub("", tag.group(0)), new)
        if new != text:
            page.write_text(new)
            changed += 1
    return changed


def build(locations: Locations) -> str:
    """Rebuilds the site from every stored result; returns its index page.

    Raises AssetsMissing (after building) when the site still links CDNs.
    """
    site, folder = join(locations.reports, "data_docs"), site_folder(locations)
    with FolderLock(locations.quality):
        gx.context(locations.quality, folder).build_data_docs(site_names=[gx.DATA_DOCS_SITE])
        try:
            localize(folder)
        finally:
            if is_s3(site):
                fs.copy_tree(folder, site)
    return join(site, "index.html")
