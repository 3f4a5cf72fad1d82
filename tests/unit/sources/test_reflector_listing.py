"""A LIST in progress (`reflector._Listing`): each view keeps the arrival time of the page that brought it, in list
order, without a tuple per object (the start-up peak at 100,000 objects per resource)."""

from __future__ import annotations

from bgpadv.core.views import Namespace
from bgpadv.sources.reflector import _Listing  # its memory per object is under test, which no public reading shows


def _page(listing: _Listing, names: list[str], at: float) -> None:
    for name in names:
        listing.views[name] = Namespace(name)
    listing.pages.append((len(listing.views), at))


def test_each_listed_view_carries_the_arrival_of_its_page_in_list_order() -> None:
    listing = _Listing()
    _page(listing, ["a", "b"], 1.0)
    _page(listing, [], 2.0)  # an empty page (a continue token with no items) moves nothing
    _page(listing, ["c"], 3.0)
    _page(listing, ["d", "e"], 4.0)
    assert [(k, at) for k, _, at in listing.items()] == [("a", 1.0), ("b", 1.0), ("c", 3.0), ("d", 4.0), ("e", 4.0)]


def test_an_object_listed_twice_keeps_its_first_place_and_its_last_view() -> None:
    listing = _Listing()
    _page(listing, ["a", "b"], 1.0)
    listing.views["a"] = Namespace("a", resource_version="9")  # a second copy on the next page
    _page(listing, ["c"], 2.0)
    assert [(k, v.resource_version, at) for k, v, at in listing.items()] == [
        ("a", "9", 1.0),
        ("b", "", 1.0),
        ("c", "", 2.0),
    ]


def test_an_empty_list_yields_nothing() -> None:
    assert list(_Listing().items()) == []
