"""The exported page's title and table of contents, taken from the page itself.

The notebook's header cell writes the experiment's H1 and a marker (page.TOC_MARK); the HTML
export knows neither the experiment nor its sections, so both are read back from the page: the
`<title>` from the first H1 (nbconvert would call every report "Notebook"), the contents from the
H2 sections' anchors, which nbconvert gives every markdown heading.
"""
from __future__ import annotations

import re
from html import escape, unescape

from .page import TOC_MARK

_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)
_H2 = re.compile(r'<h2 id="([^"]+)"[^>]*>(.*?)</h2>', re.S)
_TAGS = re.compile(r"<[^>]+>")


def finish_page(page: str) -> str:
    return _with_contents(_with_title(page))


def _text(fragment: str) -> str:
    return unescape(_TAGS.sub("", fragment)).replace("¶", "").strip()


def _with_title(page: str) -> str:
    h1 = _H1.search(page)
    if not h1:
        return page
    return re.sub(r"<title>.*?</title>", f"<title>{escape(_text(h1.group(1)))}</title>", page, count=1, flags=re.S)


def _with_contents(page: str) -> str:
    sections = [(anchor, _text(title)) for anchor, title in _H2.findall(page)]
    if TOC_MARK not in page or not sections:
        return page
    items = "".join(f'<li><a href="#{anchor}">{escape(title)}</a></li>' for anchor, title in sections)
    return page.replace(TOC_MARK, f'<nav class="eb-toc"><b>Contents</b><ul>{items}</ul></nav>', 1)
