"""The on-disk LLM cache: keyed by (model, prompt), counts calls, avoids re-running the model."""

from kgmind.eval.llm_cache import CachedLLM, LLMCache


class _Echo:
    def __init__(self):
        self.runs = 0

    def invoke(self, prompt):
        self.runs += 1
        return type("Msg", (), {"content": prompt.upper()})()


def test_cache_hits_skip_the_model(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    model = _Echo()
    llm = CachedLLM(model, "m1", cache)
    assert llm.invoke("hi") == "HI"
    assert llm.invoke("hi") == "HI"
    assert (model.runs, llm.calls, llm.misses) == (1, 2, 1)
    # another model name is another key
    other = CachedLLM(_Echo(), "m2", cache)
    other.invoke("hi")
    assert other.misses == 1 and len(cache) == 2
    cache.close()
    # persisted on disk
    again = CachedLLM(lambda p: "never", "m1", LLMCache(tmp_path / "c.sqlite"))
    assert again.invoke("hi") == "HI" and again.misses == 0


def test_default_path_under_kgmind_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path))
    cache = LLMCache()
    assert cache.path == tmp_path / "llm_cache" / "cache.sqlite"
    cache.put("m", "p", "o")
    assert cache.get("m", "p") == "o" and cache.get("m", "q") is None
