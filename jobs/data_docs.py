"""Makes the Data Docs site work offline.

Great Expectations' pages load jQuery, Bootstrap, Vega and fonts from public CDNs, and a
logo that reports the project's id to GX. Servers that run pipelines often have no way
out, so after each build the CDN files are copied into the site (from the cache that
infra/datadocs/fetch.py fills) and every page points at the copies.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "infra" / "datadocs" / "assets.json"
CACHE = REPO / ".cache" / "datadocs-assets"
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


def _assets() -> dict[str, str]:
    """CDN URL -> the vendored file's path inside the site."""
    manifest = json.loads(MANIFEST.read_text())
    found = {}
    for spec, urls in manifest["packages"].items():
        for url, name in urls.items():
            if url:
                found[url] = f"{VENDOR}/{spec.replace('/', '__')}/{name}"
    return found


def localize(site: Path) -> int:
    """Copy the vendored assets into `site` and point its pages at them; returns pages changed."""
    if not CACHE.is_dir():
        raise AssetsMissing(
            f"{CACHE} is missing: run `python infra/datadocs/fetch.py` (make report does) for an offline Data Docs site"
        )
    shutil.copytree(CACHE, site / VENDOR, dirs_exist_ok=True)
    assets = _assets()
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
