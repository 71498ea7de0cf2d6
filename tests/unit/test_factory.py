"""Store URI parsing and the per-URI store cache of kgmind.stores.factory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kgmind.stores.factory import close_all_stores, open_store, parse_store_uri
from kgmind.stores.ladybug import LadybugStore
from kgmind.stores.protocol import StoreError, StoreUnavailableError


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    close_all_stores()
    yield
    close_all_stores()


def test_parse_ladybug_uris(tmp_path: Path) -> None:
    p = parse_store_uri(f"ladybug:{tmp_path}/kg")
    assert (p.backend, p.location, p.uri) == ("ladybug", str(tmp_path / "kg"), f"ladybug:{tmp_path / 'kg'}")
    assert parse_store_uri(f"ladybug://{tmp_path}/kg") == p
    assert parse_store_uri(f"  ladybug:{tmp_path}/x/../kg ") == p


def test_parse_relative_ladybug_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    p = parse_store_uri("ladybug:./kg")
    assert p.location == str(tmp_path.resolve() / "kg")


def test_parse_default_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    for uri in (None, "", "   "):
        p = parse_store_uri(uri)
        assert p.backend == "ladybug"
        assert p.location == str((tmp_path / "home" / "demo").resolve())


@pytest.mark.parametrize("uri", ["neo4j://localhost:7687", "bolt://h", "neo4j+s://x.databases.neo4j.io"])
def test_parse_neo4j_uris(uri: str) -> None:
    p = parse_store_uri(uri)
    assert (p.backend, p.location, p.uri) == ("neo4j", uri, uri)


@pytest.mark.parametrize("uri", ["ladybug:", "ladybug:   ", "sqlite:///x.db", "/plain/path", "http://x"])
def test_parse_rejects(uri: str) -> None:
    with pytest.raises(ValueError):
        parse_store_uri(uri)


def test_open_store_caches_per_uri(tmp_path: Path) -> None:
    s1 = open_store(f"ladybug:{tmp_path}/kg", create=True)
    assert isinstance(s1, LadybugStore)
    assert open_store(f"ladybug://{tmp_path}/kg") is s1
    s2 = open_store(f"ladybug:{tmp_path}/other", create=True)
    assert s2 is not s1
    assert s1.uri == f"ladybug:{tmp_path / 'kg'}"


def test_close_all_stores_releases_and_forgets(tmp_path: Path) -> None:
    uri = f"ladybug:{tmp_path}/kg"
    s1 = open_store(uri, create=True)
    close_all_stores()
    with pytest.raises(StoreError, match="is closed"):
        s1.stats()
    s2 = open_store(uri)  # the directory lock was released, a fresh store opens
    assert s2 is not s1
    assert s2.stats().entities_total == 0


def test_open_store_errors(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreUnavailableError, match=str(f)):
        open_store(f"ladybug:{f}")
    with pytest.raises(ValueError):
        open_store("nope://x")
    # a failed open is not cached: it fails again the same way
    with pytest.raises(StoreUnavailableError):
        open_store(f"ladybug:{f}")


def test_store_buffer_setting_bounds_the_page_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """KGMIND_STORE_BUFFER_MB reaches the embedded store; a bad value is a clear error naming it."""
    from kgmind.settings import SettingsError, get_settings

    monkeypatch.setenv("KGMIND_STORE_BUFFER_MB", "64")
    get_settings.cache_clear()
    store = open_store(f"ladybug:{tmp_path}/kg", create=True)
    assert isinstance(store, LadybugStore) and store.buffer_mb == 64
    assert store.stats().entities_total == 0  # opened and readable with the bounded cache
    close_all_stores()
    monkeypatch.setenv("KGMIND_STORE_BUFFER_MB", "-5")
    get_settings.cache_clear()
    with pytest.raises(SettingsError, match="KGMIND_STORE_BUFFER_MB"):
        open_store(f"ladybug:{tmp_path}/kg")
    monkeypatch.delenv("KGMIND_STORE_BUFFER_MB")
    get_settings.cache_clear()
    assert open_store(f"ladybug:{tmp_path}/kg").buffer_mb is None  # type: ignore[attr-defined]


def test_a_full_page_cache_error_says_what_to_set() -> None:
    from kgmind.stores.ladybug.store import _engine_error

    assert "KGMIND_STORE_BUFFER_MB" in _engine_error(
        RuntimeError("Buffer manager exception: buffer pool is full")
    )
    assert _engine_error(RuntimeError("Binder exception: x")) == "Binder exception: x"
