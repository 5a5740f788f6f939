"""A test's model traffic: its cassette or the kill switch, every call captured, and the
model client handed to ``Stagehand`` (a replay-only stand-in when the model is not here)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ._config import StagehandTestConfig

if TYPE_CHECKING:
    from ..testing import CapturedCall

__all__ = ["ModelTraffic", "client_for", "stagehand_kwargs"]


class ModelTraffic:
    """For one test: cassette or kill switch, and every model call captured for evidence."""

    def __init__(self, cfg: StagehandTestConfig) -> None:
        from ..testing import block_model_requests, capture_requests, use_cassette

        self.cfg = cfg
        self.calls: list[CapturedCall] = []
        self.cassette: Any = None
        self.cassette_used = False
        self._stack: list[Any] = []
        assert cfg.cassette_path is not None
        exists = cfg.cassette_path.exists()
        live = cfg.uses_real_model and cfg.record == "live"
        recording = cfg.uses_real_model and (cfg.record == "all" or (cfg.record == "once" and not exists))
        self.recording = recording or live
        #: Answers come from the cassette: the real model need not be available at all.
        self.replaying = cfg.uses_real_model and exists and not self.recording
        managers: list[Any] = [capture_requests()]
        if cfg.uses_real_model and not live and (recording or exists):
            mode = "none" if cfg.record == "none" else cfg.record
            managers.append(use_cassette(cfg.cassette_path, mode=mode, secrets=cfg.secrets))  # type: ignore[arg-type]
            self.cassette_used = True
        if not self.recording:
            managers.append(block_model_requests())
        self._managers = managers

    def __enter__(self) -> ModelTraffic:
        for manager in self._managers:
            value = manager.__enter__()
            if isinstance(value, list):
                self.calls = value
            elif value is not None and hasattr(value, "recorded_with"):
                self.cassette = value
            self._stack.append(manager)
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._stack:
            self._stack.pop().__exit__(None, None, None)

    def how_to_record(self) -> str:
        """What to do about a blocked or unmatched request, for this test's kind of model."""
        path = self.cfg.cassette_path
        if not self.cfg.uses_real_model:
            return ""
        kind = self.cfg.model_kind
        recipe = {
            "hosted": "Record it once with a real key, e.g. `OPENAI_API_KEY=... pytest {nodeid} --stagehand-record once` "
                      "(or ANTHROPIC_API_KEY for anthropic/ models)",
            "embedded": "Record it once with the embedded model, no key needed: `pytest {nodeid} --stagehand-record "
                        "once` (run `stagehand-py model fetch` first if the model is not installed)",
            "model object": "Record it once with your model object: `pytest {nodeid} --stagehand-record once` "
                            "(it runs the model live and stores its answers)",
        }[kind]
        return (
            f"No model answer is available for this test: the cassette {path} "
            f"{'has no matching recording' if path is not None and path.exists() else 'does not exist'} and "
            f"--stagehand-record is {self.cfg.record!r}, so real model requests are blocked. {recipe}, and commit "
            "the cassette; `--stagehand-record all` re-records a cassette after the page or the prompt changed, and "
            "`--stagehand-record live` runs the model without any cassette. Or give the test a scripted model with "
            f"@pytest.mark.stagehand(model=ScriptedLLM([...])). (model: {self.cfg.model!r}, a {kind} model)"
        )


class _ReplayOnlyModel:
    """Stands in for a model that is not available here while its cassette answers."""

    def __init__(self, name: str) -> None:
        self.model_name = name

    async def request(self, request: Any) -> Any:
        from .._errors import ModelRequestBlockedError

        raise ModelRequestBlockedError(
            f"model {self.model_name!r} is not available here and its cassette has no answer for this "
            f"{request.purpose!r} request."
        )


def client_for(cfg: StagehandTestConfig, traffic: ModelTraffic) -> Any:
    """The model handed to ``Stagehand``: an ``LLMClient`` built from the test's configuration."""
    from ..llm import LLMClient

    model = cfg.model
    cassette = traffic.cassette
    if traffic.replaying and cassette is not None and cassette.at_model_boundary:
        # Recorded at the model boundary: ask the way the recording did; no model is needed.
        recorded = cassette.recorded_with
        return LLMClient(_ReplayOnlyModel(str(recorded.get("model", model))), secrets=cfg.secrets,
                         choice_mode=bool(recorded.get("choice_mode", cfg.choice_mode or False)))
    client = _real_client(cfg, traffic)
    if cassette is not None and not traffic.replaying:
        cassette.recorded_with = {"model": str(client._model_label), "choice_mode": client.choice_mode,
                                  "token_budget": _token_budget(cfg)}
    return client


def _token_budget(cfg: StagehandTestConfig) -> int | None:
    from ..llm._policy import LOCAL_TOKEN_BUDGET

    return LOCAL_TOKEN_BUDGET if cfg.model_kind == "embedded" else None


def _real_client(cfg: StagehandTestConfig, traffic: ModelTraffic) -> Any:
    from .._errors import ConfigurationError
    from ..llm import LLMClient

    model = cfg.model
    if isinstance(model, LLMClient):
        return model
    if not isinstance(model, str):
        # A test double or a user's model object (choice mode on request).
        if cfg.choice_mode is None:
            return LLMClient(model, secrets=cfg.secrets)
        return LLMClient(model, secrets=cfg.secrets, choice_mode=cfg.choice_mode)
    options: dict[str, Any] = {"secrets": cfg.secrets}
    if cfg.base_url is not None:
        options["base_url"] = cfg.base_url
    if cfg.choice_mode is not None:
        options["choice_mode"] = cfg.choice_mode
    try:
        return LLMClient(model, **options)
    except ConfigurationError as exc:
        if traffic.recording:
            raise
        if "no API key" in str(exc):
            # Replaying (or blocked): the key is never sent anywhere, the SDK only insists on one.
            return LLMClient(model, api_key="stagehand-replay-no-key", **options)
        if model.startswith("local/"):
            # The embedded model is not installed here: its cassette answers at the model boundary.
            options.pop("base_url", None)
            return LLMClient(_ReplayOnlyModel(model), **{"choice_mode": True, **options})
        raise


def stagehand_kwargs(cls: Any, cfg: StagehandTestConfig, model: Any, traffic: ModelTraffic) -> dict[str, Any]:
    """The constructor options this ``Stagehand`` class accepts, from the test's configuration."""
    budget = _token_budget(cfg)
    if traffic.replaying and traffic.cassette is not None:
        budget = traffic.cassette.recorded_with.get("token_budget", budget)  # prompts as when recorded
    offered = {"model": model, "variables": cfg.variables or None, "cache_dir": cfg.cache_dir,
               # A CPU model reads a few dozen tokens a second: keep its prompts small.
               "token_budget": budget, "allowed_domains": cfg.allowed_domains}
    params = inspect.signature(cls.__init__).parameters
    return {k: v for k, v in offered.items() if k in params and v is not None}
