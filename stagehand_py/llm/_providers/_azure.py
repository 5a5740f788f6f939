"""Azure OpenAI: the openai SDK's ``AsyncAzureOpenAI`` client on a resource's deployments.

A deployment speaks the Chat Completions API of the model behind it, so requests and answers
are :class:`~._openai.OpenAIChatModel`'s; only the client differs: the endpoint, the
``api-version`` query parameter, the deployment in the path
(``/openai/deployments/<deployment>/chat/completions``) and an ``api-key`` header or an
Entra ID token from ``azure_ad_token_provider``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import openai

from .._profiles import Profile
from ._openai import OpenAIChatModel

__all__ = ["AzureOpenAIModel"]


class AzureOpenAIModel(OpenAIChatModel):
    """``azure/<deployment>``."""

    provider = "azure"

    def __init__(
        self,
        deployment: str,
        *,
        api_key: str,
        endpoint: str,
        api_version: str,
        token_provider: Callable[[], str | Awaitable[str]] | None,
        timeout: float | None,
        profile: Profile,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        super().__init__(deployment, api_key=api_key, base_url=endpoint, timeout=timeout, profile=profile,
                         http_client=http_client)
        self.api_version = api_version
        self._endpoint = endpoint
        self._token_provider = token_provider

    def __repr__(self) -> str:  # never show the key
        return (f"{type(self).__name__}({self.model_name!r}, endpoint={self._base_url!r}, "
                f"api_version={self.api_version!r}, mode={self.profile.output_mode!r})")

    def _make_sdk(self, http_client: httpx2.AsyncClient | None) -> Any:
        # Every credential and setting is passed, so the SDK reads none of its env vars.
        credential: dict[str, Any] = ({"azure_ad_token_provider": self._token_provider}
                                      if self._token_provider is not None else {"api_key": self._api_key})
        return openai.AsyncAzureOpenAI(
            azure_endpoint=self._endpoint, api_version=self.api_version, **credential,
            timeout=self._default_timeout(), max_retries=0, http_client=http_client,
        )

    def _max_tokens_key(self) -> str:
        return "max_completion_tokens"  # Azure takes OpenAI's name (its o-series models require it)
