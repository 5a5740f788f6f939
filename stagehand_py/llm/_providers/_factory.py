"""The provider factory: ``"provider/model"`` plus options becomes a provider adapter.

The one place a model string's provider prefix and a provider's keys and endpoint are read;
:class:`~stagehand_py.llm.LLMClient` calls it for a model string, nothing else does.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping

import httpx2

from ..._errors import ConfigurationError
from .._profiles import OutputMode, Profile, default_profile
from ._common import HTTPProviderModel, env_var_for, key_env_vars
from ._local import LocalModel

__all__ = ["AzureTokenProvider", "resolve_model"]

_PROVIDERS = ("openai", "anthropic", "google", "azure", "local")

#: Azure's endpoint and API version, when not passed: the names Microsoft's docs and the openai SDK use.
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_API_VERSION_ENV = "OPENAI_API_VERSION"

#: Returns an Entra ID (Azure AD) bearer token; called before every Azure request.
AzureTokenProvider = Callable[[], "str | Awaitable[str]"]


def resolve_model(
    model: str,
    *,
    api_key: str | None,
    base_url: str | None,
    timeout: float | None,
    profile: Profile | None,
    output_mode: OutputMode | None,
    http_client: httpx2.AsyncClient | None,
    env: Mapping[str, str] | None = None,
    api_version: str | None = None,
    azure_ad_token_provider: AzureTokenProvider | None = None,
) -> HTTPProviderModel | LocalModel:
    """Turn ``"provider/model"`` plus options into a provider adapter: the one place a model
    string's provider prefix is read.

    Keys are read here, once per client, from the argument or the provider's usual env var;
    nothing is stored globally.
    """
    environ = os.environ if env is None else env
    provider, sep, name = model.partition("/")
    if not sep or not name or provider not in _PROVIDERS:
        raise ConfigurationError(
            f"model {model!r} is not '<provider>/<model name>' with a provider of {', '.join(_PROVIDERS)}. "
            "Examples: 'openai/gpt-4.1-mini', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash', "
            "'azure/<your deployment name>', 'local/<file>.gguf' (in-process "
            "llama.cpp); for an OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio) use "
            "'openai/<its model name>' with base_url=."
        )
    chosen = profile or default_profile(provider, name, base_url=base_url)
    if output_mode is not None:
        chosen = chosen.model_copy(update={"output_mode": output_mode})
    if provider == "local":
        if api_key is not None or base_url is not None or http_client is not None:
            raise ConfigurationError(
                f"{model!r} runs in this process: api_key=, base_url= and http_client= do not apply. For a "
                "llama.cpp server use 'openai/<name>' with base_url= and profile=llama_cpp_server_profile()."
            )
        return LocalModel(name, profile=chosen, timeout=timeout)
    if provider != "azure" and (api_version is not None or azure_ad_token_provider is not None):
        raise ConfigurationError(
            f"api_version= and azure_ad_token_provider= configure 'azure/<deployment>' models only, not {model!r}."
        )
    if provider == "azure":
        return _azure_model(name, api_key=api_key, endpoint=base_url, api_version=api_version,
                            token_provider=azure_ad_token_provider, timeout=timeout, profile=chosen,
                            http_client=http_client, environ=environ)
    key = api_key or next((environ[v] for v in key_env_vars(provider) if environ.get(v)), None)
    if not key:
        if base_url is None:
            raise ConfigurationError(
                f"no API key for {model!r}: pass api_key= or set the {' or '.join(key_env_vars(provider))} "
                "environment variable"
                + ("; for a local OpenAI-compatible server pass base_url= (e.g. 'http://localhost:11434/v1')."
                   if provider == "openai" else ".")
            )
        key = "not-needed"  # local servers ignore it, the SDKs insist on one
    # Imported here: each SDK takes a second or more to import, and a user of one provider
    # (or of a test double) should not pay for the other.
    cls: type[HTTPProviderModel]
    if provider == "openai":
        from ._openai import OpenAIChatModel as cls
    elif provider == "google":
        try:
            from ._google import GoogleModel as cls
        except ImportError as exc:
            raise ConfigurationError(
                f"{model!r} needs Google's SDK, which is not installed ({exc}): pip install 'stagehand_py[google]' "
                "(or pip install google-genai)."
            ) from exc
    else:
        from ._anthropic import AnthropicModel as cls
    return cls(name, api_key=key, base_url=base_url, timeout=timeout, profile=chosen, http_client=http_client)


def _azure_model(
    deployment: str, *, api_key: str | None, endpoint: str | None, api_version: str | None,
    token_provider: AzureTokenProvider | None, timeout: float | None, profile: Profile,
    http_client: httpx2.AsyncClient | None, environ: Mapping[str, str],
) -> HTTPProviderModel:
    """``azure/<deployment>``: the endpoint (``base_url=``), API version and key or token provider."""
    endpoint = endpoint or environ.get(AZURE_ENDPOINT_ENV)
    api_version = api_version or environ.get(AZURE_API_VERSION_ENV)
    missing = [what for what, value in ((f"base_url= (your resource's endpoint, e.g. "
                                         f"'https://<resource>.openai.azure.com') or {AZURE_ENDPOINT_ENV}", endpoint),
                                        (f"api_version= (e.g. '2024-10-21') or {AZURE_API_VERSION_ENV}", api_version))
               if not value]
    if api_key is not None and token_provider is not None:
        raise ConfigurationError(f"azure/{deployment}: pass api_key= or azure_ad_token_provider=, not both.")
    key = api_key if token_provider is not None or api_key else environ.get(env_var_for("azure"))
    if not key and token_provider is None:
        missing.append(f"api_key= or {env_var_for('azure')}, or azure_ad_token_provider= (Entra ID)")
    if missing:
        raise ConfigurationError(f"azure/{deployment} needs " + "; ".join(missing) + ".")
    assert endpoint is not None and api_version is not None
    from ._azure import AzureOpenAIModel

    return AzureOpenAIModel(deployment, api_key=key or "", endpoint=endpoint, api_version=api_version,
                            token_provider=token_provider, timeout=timeout, profile=profile, http_client=http_client)
