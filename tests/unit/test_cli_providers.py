"""Provider models in `kgmind ask`: a missing package, key or endpoint is one `error:` line, no traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgmind import llm
from kgmind.cli import app
from kgmind.llm import providers

runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KGMIND_HOME", str(tmp_path / "home"))
    llm.get_chat_model.cache_clear()


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ask(model: str, tmp_path: Path) -> tuple[int, str, str]:
    from kgmind.stores.ladybug import LadybugStore

    if not LadybugStore.exists(tmp_path / "kg"):  # ask reads an existing store only
        LadybugStore(tmp_path / "kg").close()
    res = runner.invoke(
        app,
        [
            "ask",
            "fever?",
            "--mode",
            "llm_only",
            "--store",
            f"ladybug:{tmp_path / 'kg'}",
            "--model",
            model,
            "-q",
        ],
    )
    return res.exit_code, res.stdout, res.stderr


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("model", "package", "extra"),
    [
        ("openai:gpt-4o-mini", "langchain-openai", "kgmind[openai]"),
        ("anthropic:claude-x", "langchain-anthropic", "kgmind[anthropic]"),
        ("ollama:x", "langchain-ollama", "kgmind[ollama]"),
    ],
)
def test_missing_provider_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model: str, package: str, extra: str
) -> None:
    module = package.replace("-", "_")
    real = providers._module_available
    monkeypatch.setattr(providers, "_module_available", lambda m: m != module and real(m))
    code, out, err = _ask(model, tmp_path)
    line = _one_error_line(err)
    assert code == 1 and out == ""
    assert line == f"error: the model {model} needs {package}: pip install '{extra}'"


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(providers, "_module_available", lambda m: True)  # the package is not what is missing
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, _, err = _ask("anthropic:claude-x", tmp_path)
    assert code == 1
    assert (
        _one_error_line(err)
        == "error: the model anthropic:claude-x needs an API key: export ANTHROPIC_API_KEY=..."
    )
    monkeypatch.setenv("OPENAI_API_KEY", "  ")  # blank counts as missing
    code, _, err = _ask("openai:gpt-4o-mini", tmp_path)
    assert code == 1 and "export OPENAI_API_KEY=..." in _one_error_line(err)


def test_unreachable_openai_endpoint_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("langchain_openai", reason="needs langchain-openai to make a real connection attempt")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    code, out, err = _ask("openai:gpt-4o-mini", tmp_path)
    assert code == 1 and out == ""
    assert _one_error_line(err) == (
        f"error: cannot reach the model openai:gpt-4o-mini at {url}: check OPENAI_BASE_URL and the network"
    )


def test_unreachable_ollama_endpoint_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("langchain_ollama", reason="needs langchain-ollama to make a real connection attempt")
    host = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("OLLAMA_HOST", host)
    code, _, err = _ask("ollama:x", tmp_path)
    assert code == 1
    assert (
        _one_error_line(err)
        == f"error: cannot reach the model ollama:x at {host}: start `ollama serve` or set OLLAMA_HOST"
    )


def test_connection_errors_are_recognised_through_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)

    class APIConnectionError(Exception):  # the name provider SDKs use
        pass

    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as low:
            raise RuntimeError("node failed") from low
    except RuntimeError as exc:
        err = llm.unreachable_model_error(exc, "ollama:x")
    assert (
        err is not None
        and str(err) == "cannot reach the model ollama:x: start `ollama serve` or set OLLAMA_HOST"
    )
    assert llm.unreachable_model_error(APIConnectionError("x"), "other:m") is not None
    assert llm.unreachable_model_error(ValueError("bad json"), "openai:x") is None
    # an in-process model reaches no endpoint: the connection error came from elsewhere
    assert llm.unreachable_model_error(ConnectionError("x"), "local") is None
    assert llm.unreachable_model_error(ConnectionError("x"), "fake:t") is None


def test_a_store_error_is_not_blamed_on_the_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kgmind.cli import ask as ask_mod
    from kgmind.stores.protocol import StoreUnavailableError

    def down(*args: object, **kwargs: object) -> None:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as exc:
            raise StoreUnavailableError("cannot open the store neo4j://127.0.0.1:1: refused") from exc

    monkeypatch.setattr(ask_mod, "run_question", down)
    code, _, err = _ask("openai:gpt-4o-mini", tmp_path)
    assert code == 1
    assert _one_error_line(err) == "error: cannot open the store neo4j://127.0.0.1:1: refused"


def test_every_provider_has_an_extra_with_its_package() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for provider, spec in llm.PROVIDERS.items():
        assert any(req.startswith(spec.package) for req in extras[provider]), provider
    assert any(req.startswith("langgraph-cli[inmem]") for req in extras["studio"])
    assert any(req.startswith("langgraph-cli[inmem]") for req in extras["dev"])
