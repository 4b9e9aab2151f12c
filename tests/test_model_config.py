"""Model configuration: precedence, the TOML format, errors, ``list_models``, ``utdebug models``."""

from __future__ import annotations

import argparse
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from utdebug import models_cmd
from utdebug.agents.base import Meter, Metered
from utdebug.agents.config import ConfigError, ModelSpec, load_config, resolve_model_spec
from utdebug.agents.factory import build_litellm_model
from utdebug.agents.litellm_client import LiteLLMModel
from utdebug.agents.model_list import list_models

CONFIG = """
default = "local"

[models.local]
model = "openai/qwen2.5-coder"
api_base = "http://127.0.0.1:{port}/v1"
timeout = 30
max_retries = 2
concurrency = 3
supports_prefill = false
temperature = 0.2
max_tokens = 512
stall_timeout = 20
stream = false
adaptive = false

[models.claude]
model = "anthropic/claude-3-5-haiku-20241022"
api_key_env = "MY_CLAUDE_KEY"
cost_limit = 1.5
supports_n = false
[models.claude.extra]
extra_headers = {{ "X-Team" = "qa" }}
"""


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("UTDEBUG_CONFIG", "UTDEBUG_MODEL", "MY_CLAUDE_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # never the user's file


def write_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "utdebug.toml"
    path.write_text(text)
    monkeypatch.setenv("UTDEBUG_CONFIG", str(path))
    return path


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_config(tmp_path, monkeypatch, CONFIG.format(port=9))


# --- precedence and the file format -------------------------------------------------------------


def test_precedence_cli_then_env_then_config(
    configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UTDEBUG_MODEL", "claude")
    assert resolve_model_spec("openai/gpt-4o-mini").litellm_model == "openai/gpt-4o-mini"
    assert resolve_model_spec("openai/gpt-4o-mini").source.startswith("--model")
    from_env = resolve_model_spec(None)
    assert from_env.name == "claude" and from_env.source.startswith("env UTDEBUG_MODEL")
    monkeypatch.delenv("UTDEBUG_MODEL")
    from_file = resolve_model_spec(None)
    assert from_file.name == "local"
    assert from_file.source == f"default in {configured} -> [models.local] in {configured}"


def test_configured_fields(configured: Path) -> None:
    local = resolve_model_spec("local")
    assert local == ModelSpec(
        name="local",
        kind="litellm",
        litellm_model="openai/qwen2.5-coder",
        api_base="http://127.0.0.1:9/v1",
        timeout=30.0,
        max_retries=2,
        concurrency=3,
        supports_prefill=False,
        temperature=0.2,
        max_tokens=512,
        stall_timeout=20.0,
        stream=False,
        adaptive=False,
        source=local.source,
    )
    claude = resolve_model_spec("claude")
    assert claude.api_key_env == "MY_CLAUDE_KEY" and claude.cost_limit == 1.5
    assert claude.supports_n is False and claude.timeout == 120.0 and claude.concurrency == 8
    assert dict(claude.extra) == {"extra_headers": {"X-Team": "qa"}}


def test_raw_strings_and_builtins(tmp_path: Path) -> None:
    raw = resolve_model_spec("ollama/qwen2.5-coder:7b")
    assert (raw.kind, raw.litellm_model, raw.max_retries) == ("litellm", raw.name, 4)
    assert resolve_model_spec("sim").kind == "sim"
    scripted = resolve_model_spec(f"scripted:{tmp_path}/replies.json")
    assert scripted.kind == "scripted" and scripted.script_path == tmp_path / "replies.json"
    assert resolve_model_spec(None, default="sim").source == "built-in default (built-in)"


def test_default_path_is_read(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "utdebug" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('default = "sim"\n')
    spec = resolve_model_spec(None)
    assert spec.kind == "sim" and str(path) in spec.source
    assert load_config().path == path


def test_no_config_no_choice_is_a_clear_error() -> None:
    assert load_config().path is None
    with pytest.raises(ConfigError, match="no model chosen: pass --model"):
        resolve_model_spec(None)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('default = "x"\n[models.a]\nmodel = "openai/a"\n', r"default = 'x' is not a configured"),
        ('[models.a]\nmodel = "openai/a"\nbase_url = "http://x"\n', r"unknown key\(s\) base_url"),
        ('[models.a]\nmodel = "openai/a"\ntimeout = "fast"\n', r"timeout must be a positive"),
        ('[models.a]\nmodel = "openai/a"\nconcurrency = true\n', r"concurrency must be an int"),
        ('[models.a]\nmodel = "openai/a"\nconcurrency = 0\n', r"concurrency must be an int"),
        ('[models.a]\nmodel = "openai/a"\nsupports_prefill = "yes"\n', r"true or false"),
        ('[models.a]\napi_base = "http://x"\n', r"'model' .* is required"),
        ('[models.sim]\nmodel = "openai/a"\n', r"reserved"),
        ('[model.a]\nmodel = "openai/a"\n', r"unknown top-level key\(s\) model"),
        ("default = 3\n", r"'default' must be a string"),
        ('[models]\na = "openai/a"\n', r"\[models.a\] must be a table"),
        ('[models.a]\nmodel = "openai/a"\nmax_tokens = 0\n', r"max_tokens must be an int"),
        (
            '[models.a]\nmodel = "openai/a"\nmax_tokens = { tests = 9 }\n',
            r"max_tokens: unknown purpose\(s\) tests \(known: test, vote, edit, solution\)",
        ),
        ('[models.a]\nmodel = "openai/a"\nmax_tokens = { vote = 0.5 }\n', r"max_tokens.vote must"),
        ('[models.a]\nmodel = "openai/a"\nmax_tokens = "big"\n', r"max_tokens must be an int"),
    ],
)
def test_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, pattern: str
) -> None:
    path = write_config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError, match=pattern) as info:
        resolve_model_spec("sim")
    assert str(path) in str(info.value)


def test_bad_toml_names_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, monkeypatch, '[models.a]\nmodel = "openai/a"\ntimeout = = 3\n')
    with pytest.raises(ConfigError, match=r"invalid TOML.*line 3"):
        load_config()


def test_missing_named_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UTDEBUG_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match=r"UTDEBUG_CONFIG names .*nope.toml, which does not"):
        resolve_model_spec("sim")


# --- building -----------------------------------------------------------------------------------


def test_build_litellm_model(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-test")
    meter = Meter(cost_limit=5.0)
    built = build_litellm_model(resolve_model_spec("claude"), meter)
    assert isinstance(built, Metered) and meter.cost_limit == 1.5  # the lower limit applies
    inner = built.inner
    assert isinstance(inner, LiteLLMModel)
    assert inner.api_key == "sk-test" and inner.supports_n is False
    assert not inner.supports_prefill  # not configured: decided by a probe, none yet
    assert inner.extra == {"extra_headers": {"X-Team": "qa"}} and inner.meter is meter
    assert inner.stream and inner.adaptive and inner.stall_timeout == 60.0

    local = build_litellm_model(resolve_model_spec("local"))
    assert isinstance(local, LiteLLMModel)
    assert (local.timeout, local.max_retries, local.concurrency) == (30.0, 2, 3)
    assert (local.stall_timeout, local.stream, local.adaptive) == (20.0, False, False)
    assert local.limiter.limit == 3  # not adaptive: always the configured concurrency
    assert local.overrides.temperature == 0.2 and local.overrides.max_tokens == 512
    assert local.identity == (
        'openai/qwen2.5-coder@http://127.0.0.1:9/v1 {"sampling": {"max_tokens": 512, '
        '"temperature": 0.2}}'
    )
    assert not local.supports_prefill and local.api_base == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="sim"):
        build_litellm_model(resolve_model_spec("sim"))


def test_unknown_provider_is_a_config_error(configured: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'foo' in the model 'foo/bar'"):
        build_litellm_model(resolve_model_spec("foo/bar"))
    with pytest.raises(ConfigError, match=r"unknown model 'mystery-model'"):
        build_litellm_model(resolve_model_spec("mystery-model"))


def test_a_raw_string_names_the_entry_that_has_its_api_base(configured: Path) -> None:
    spec = resolve_model_spec("openai/qwen2.5-coder")
    assert spec.api_base is None
    assert spec.hint is not None
    assert "No api_base was given for 'openai/qwen2.5-coder'" in spec.hint
    assert "the config entry 'local'" in spec.hint and "use --model local" in spec.hint
    assert "http://127.0.0.1:9/v1" in spec.hint
    spec2 = resolve_model_spec("openai/local")  # the entry's NAME after a provider
    assert spec2.hint is not None and "use --model local" in spec2.hint
    assert resolve_model_spec("openai/gpt-4o-mini").hint is None


# --- listing ------------------------------------------------------------------------------------


class _ModelsHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": "qwen2.5-coder"}]}).encode()
            self.send_response(200)
        else:
            body = b"{}"
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server_port() -> Iterator[int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ModelsHandler)
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    t.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_list_models_probes_local_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server_port: int
) -> None:
    dead = free_port()
    text = CONFIG.format(port=server_port) + (
        f'[models.down]\nmodel = "openai/x"\napi_base = "http://127.0.0.1:{dead}/v1"\n'
    )
    write_config(tmp_path, monkeypatch, text)
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-test")
    by_name = {s.spec.name: s for s in list_models(check=True)}
    assert set(by_name) == {"local", "claude", "down", "sim", "scripted:PATH"}
    # The stub lists its model but answers no completion: reachable, yet not usable (the
    # probe's tiny completion fails). A server that answers is in test_model_failures.py.
    assert by_name["local"].ok is False and by_name["local"].default
    assert by_name["local"].verdict.startswith("reachable (HTTP 200, 1 model(s)), but it cannot")
    assert by_name["local"].server is None
    assert by_name["down"].ok is False and by_name["down"].verdict.startswith("unreachable")
    assert by_name["claude"].ok is True and "MY_CLAUDE_KEY" in by_name["claude"].verdict
    assert by_name["sim"].verdict == "built-in, offline" and by_name["sim"].ok

    unchecked = {s.spec.name: s for s in list_models(check=False)}
    assert unchecked["local"].ok is None and "not checked" in unchecked["local"].verdict


def test_list_models_hosted_key_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UTDEBUG_MODEL", "openai/gpt-4o-mini")
    (status,) = [s for s in list_models() if s.spec.kind == "litellm"]
    assert status.spec.name == "openai/gpt-4o-mini" and status.default
    assert status.ok is False and status.verdict == "missing API key: set OPENAI_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (status,) = [s for s in list_models() if s.spec.kind == "litellm"]
    assert status.ok is True


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="utdebug")
    sub = parser.add_subparsers(dest="command", required=True)
    models_cmd.add_parser(sub)
    return parser.parse_args(argv)


def test_models_command_json(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-test")
    args = _parse(["models", "--json"])
    assert args.json and not args.check
    assert models_cmd.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = {m["name"]: m for m in payload["models"]}
    assert rows["local"]["litellm_model"] == "openai/qwen2.5-coder" and rows["local"]["default"]
    assert rows["claude"]["ok"] is True and rows["sim"]["verdict"] == "built-in, offline"


def test_models_command_table(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert models_cmd.run(_parse(["models"])) == 0
    out = capsys.readouterr().out
    assert "openai/qwen2.5-coder" in out and "built-in, offline" in out and "MY_CLAUDE_KEY" in out


def test_models_command_config_error_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(tmp_path, monkeypatch, "default = [\n")
    assert models_cmd.run(_parse(["models", "--json"])) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("utdebug models: ")
    assert "invalid TOML" in captured.err


def test_the_first_model_is_connected_as_docs_models_says_at_its_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/models.md (and the README) open with a five-line 'Connect your first model': the
    config its first line writes is read as it says (a default named local, on the server of
    its second line)."""
    import re
    import shlex

    repo = Path(__file__).resolve().parents[1]
    for doc in (repo / "docs" / "models.md", repo / "README.md"):
        text = doc.read_text(encoding="utf-8")
        section = text.split("## Connect your first model\n", 1)[1].split("\n## ", 1)[0]
        block = section.split("```bash\n", 1)[1].split("```", 1)[0]
        lines = block.strip().splitlines()
        assert len(lines) <= 5, lines
        written = re.search(r"printf ('[^']*')", lines[0])
        assert written is not None, lines[0]
        config = shlex.split(written.group(1))[0].encode().decode("unicode_escape")
        path = write_config(tmp_path, monkeypatch, config)
        spec = resolve_model_spec(None)
        assert (spec.name, spec.litellm_model, spec.api_base) == (
            "local",
            "openai/qwen2.5-coder",
            "http://127.0.0.1:8000/v1",
        ), path
        assert "--port 8000" in lines[1] and "models --check" in lines[2]
        if doc.name == "models.md":  # at its top
            assert text.index("## Connect your first model") == text.index("## ")
    assert text.index("## Connect your first model") < text.index("## Commands")
