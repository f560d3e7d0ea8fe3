"""Plumbing shared by the SDK-backed providers: lazy SDK import, keys, clients, errors.

The provider SDKs are optional extras, so nothing here imports them at module load: the
SDK is imported, and its client built, on a model's first call.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import threading
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Protocol

from beamweaver_core.exceptions import (
    MalformedModelResponseError,
    ModelAuthenticationError,
    ModelProviderError,
    ModelRateLimitError,
)
from beamweaver_core.llm.base import ChatModel, StreamItem, ToolCallChunk, ToolSpec
from beamweaver_core.messages import Message

logger = logging.getLogger("beamweaver_core.llm")

_MIN_SECRET_LENGTH = 8


def with_extra_body(method: Callable[..., Any], request: dict[str, Any]) -> dict[str, Any]:
    """Move the options an SDK method does not accept into its `extra_body`.

    The SDK refuses keyword arguments it does not know, yet servers take more: vLLM's
    `top_k`, or API fields newer or older than the installed SDK. `extra_body` sends them
    in the JSON body as they are.
    """
    parameters = inspect.signature(method).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return request
    known = {k: v for k, v in request.items() if k in parameters}
    unknown = {k: v for k, v in request.items() if k not in parameters}
    if unknown:
        known["extra_body"] = {**unknown, **(known.get("extra_body") or {})}
    return known


def parse_tool_arguments(
    raw: Any, *, tool_name: str, provider: str, hint: str = ""
) -> dict[str, Any]:
    """Decode a tool call's JSON-text arguments, which must be a JSON object.

    An empty string means "no arguments": several OpenAI-compatible servers send that for
    tools without parameters.
    """
    if not isinstance(raw, str):
        raise MalformedModelResponseError(
            f"{provider} returned arguments for tool {tool_name!r} that are not JSON text "
            f"(got {type(raw).__name__}). Retry the call; if it persists, the server is not "
            "speaking the expected API."
        )
    if not raw.strip():
        return {}
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MalformedModelResponseError(
            f"{provider} returned arguments for tool {tool_name!r} that are not valid JSON "
            f"({exc.msg} at position {exc.pos}): {_clip(raw)}. Retry the call{hint}."
        ) from exc
    return require_json_object(args, tool_name=tool_name, provider=provider)


def require_json_object(args: Any, *, tool_name: str, provider: str) -> dict[str, Any]:
    """Return `args` as a dict, or raise if the model produced something else."""
    if not isinstance(args, Mapping):
        raise MalformedModelResponseError(
            f"{provider} returned arguments for tool {tool_name!r} that are a JSON "
            f"{type(args).__name__}, not an object: {_clip(json.dumps(args))}. Retry the call; "
            "tool arguments must be a JSON object."
        )
    return dict(args)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


class StreamedReply(Protocol):
    """Accumulates one streamed response: `add` takes an event and returns its deltas
    (text and tool-call pieces, often none), `message` returns the complete assistant
    message at the end."""

    def add(self, event: Any) -> list[str | ToolCallChunk]: ...

    def message(self) -> Message: ...


class SDKChatModel(ChatModel):
    """A `ChatModel` backed by an official provider SDK, imported on first use.

    Subclasses set the class attributes below and implement `_build_client`, `_request`,
    `_create`, `_parse` and `_new_reply`; `invoke`, `ainvoke`, `stream` and `astream` are
    written once here, every SDK call wrapped in `self._translated_errors()`.
    """

    _sdk_module: str  # the importable SDK package, e.g. "openai"
    _label: str  # how messages name the provider, e.g. "OpenAI"
    _env_var: str  # where the API key is read from when none is passed
    _base_error: str  # the SDK's root exception class, e.g. "OpenAIError"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60,
        max_retries: int = 3,
        temperature: float | None = None,
        http_client: Any = None,
        async_http_client: Any = None,
        **extra: Any,
    ) -> None:
        """The options every provider takes; `extra` goes into every request as is."""
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"{self._label} model name must be a non-empty string, got {model!r}")
        self.model_name = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.extra = dict(extra)
        self._api_key = api_key
        self._http_clients = {False: http_client, True: async_http_client}
        self._clients: dict[bool, Any] = {}
        self._client_lock = threading.Lock()
        self._used_key: str | None = None

    def _sdk(self) -> ModuleType:
        try:
            return importlib.import_module(self._sdk_module)
        except ImportError as exc:
            raise ModelProviderError(
                f"The {self._label} provider needs the {self._sdk_module!r} package, which is "
                f"not installed. Install the extra: pip install 'beamweaver[{self._sdk_module}]'"
            ) from exc

    def _resolve_api_key(self) -> str:
        key = self._api_key or os.environ.get(self._env_var)
        if key:
            return key
        raise ModelAuthenticationError(
            f"No {self._label} API key configured for model {self.model_name!r}. Set the "
            f"{self._env_var} environment variable (export {self._env_var}=...) or pass "
            f"api_key=... to the model."
        )

    def _client(self, *, asynchronous: bool) -> Any:
        """The SDK client, built once per flavour (sync/async) on first use."""
        with self._client_lock:
            client = self._clients.get(asynchronous)
            if client is None:
                sdk = self._sdk()
                key = self._resolve_api_key()
                client = self._build_client(
                    sdk,
                    key,
                    asynchronous=asynchronous,
                    http_client=self._http_clients[asynchronous],
                )
                self._used_key = key
                self._clients[asynchronous] = client
                logger.debug(
                    "created %s %s client for model %r",
                    self._label,
                    "async" if asynchronous else "sync",
                    self.model_name,
                )
            return client

    @abstractmethod
    def _build_client(
        self, sdk: ModuleType, api_key: str, *, asynchronous: bool, http_client: Any
    ) -> Any:
        """Instantiate the SDK's (async) client."""

    @abstractmethod
    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of the SDK's create call for this conversation."""

    @abstractmethod
    def _create(self, request: dict[str, Any], *, asynchronous: bool) -> Any:
        """Call the SDK's create method (a coroutine when `asynchronous`)."""

    @abstractmethod
    def _parse(self, response: Any) -> Message:
        """The assistant `Message` of a complete (non-streamed) response."""

    @abstractmethod
    def _new_reply(self) -> StreamedReply:
        """An accumulator for one streamed response."""

    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        """Send the conversation and return the assistant's reply."""
        request = self._request(messages, tools)
        with self._translated_errors():
            return self._parse(self._create(request, asynchronous=False))

    async def ainvoke(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Message:
        """Async `invoke`, on the SDK's async client."""
        request = self._request(messages, tools)
        with self._translated_errors():
            return self._parse(await self._create(request, asynchronous=True))

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Iterator[StreamItem]:
        """Yield text deltas and tool-call pieces as they arrive, then the final assistant
        `Message` (the same one `invoke` returns for the same reply)."""
        request = {**self._request(messages, tools), "stream": True}
        with self._translated_errors():
            reply = self._new_reply()
            with self._create(request, asynchronous=False) as events:
                for event in events:
                    yield from reply.add(event)
            yield reply.message()

    async def astream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[StreamItem]:
        """Async `stream`, on the SDK's async client."""
        request = {**self._request(messages, tools), "stream": True}
        with self._translated_errors():
            reply = self._new_reply()
            async with await self._create(request, asynchronous=True) as events:
                async for event in events:
                    for delta in reply.add(event):
                        yield delta
            yield reply.message()

    @contextmanager
    def _translated_errors(self) -> Iterator[None]:
        """Re-raise SDK errors as BeamWeaver model errors, chaining the original."""
        try:
            yield
        except ModelProviderError:
            raise
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _map_error(self, exc: Exception) -> ModelProviderError | None:
        sdk = self._sdk()
        name = f"{self._label} model {self.model_name!r}"
        plural = "retry" if self.max_retries == 1 else "retries"
        retried = f"after {self.max_retries} {plural} (max_retries={self.max_retries})"
        status = getattr(exc, "status_code", None)
        detail = self._redact(_server_message(exc))
        if isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
            return ModelAuthenticationError(
                f"{name}: the provider refused the credentials (HTTP {status}: {detail}). Check "
                f"the key in {self._env_var} (export {self._env_var}=...) or the api_key=... "
                "passed to the model, and that it may use this model."
            )
        if isinstance(exc, sdk.RateLimitError):
            return ModelRateLimitError(
                f"{name}: still rate-limited {retried} (HTTP {status}: {detail}). Wait and retry, "
                "lower the request rate, raise max_retries, or check the account's quota."
            )
        if isinstance(exc, sdk.APIResponseValidationError | json.JSONDecodeError):
            return MalformedModelResponseError(
                f"{name}: the provider's response is not a valid chat response ({detail}). "
                "Retry the call; if it persists, check that base_url points at a server "
                f"speaking the {self._label} API."
            )
        if isinstance(exc, sdk.APITimeoutError):
            return ModelProviderError(
                f"{name}: the request timed out {retried} (timeout={self.timeout}s). Retry "
                "later or raise timeout=... / max_retries=...."
            )
        if isinstance(exc, sdk.APIConnectionError):
            where = self.base_url or "the provider's default endpoint"
            return ModelProviderError(
                f"{name}: could not connect to {where} {retried} ({detail}). Check the network "
                "and base_url, then retry."
            )
        if isinstance(exc, sdk.APIStatusError):
            if not isinstance(status, int) or status < 400:
                # An error event inside a stream that had started fine; nothing was retried.
                return ModelProviderError(
                    f"{name}: the provider failed in the middle of the reply ({detail}). "
                    "Retry the call."
                )
            advice = (
                f"The provider kept failing {retried}; retry later."
                if status >= 500
                else "Check the model name and the request options."
            )
            return ModelProviderError(f"{name}: HTTP {status}: {detail}. {advice}")
        if isinstance(exc, getattr(sdk, self._base_error)):
            return ModelProviderError(
                f"{name}: the provider reported an error ({detail}). Retry the call."
            )
        return None

    def _redact(self, text: str) -> str:
        """Strip the API key from provider text: some servers echo the key they refused."""
        for key in (self._used_key, self._api_key):
            # A short "key" is no secret, and masking it would garble ordinary words.
            if key and len(key) >= _MIN_SECRET_LENGTH:
                text = text.replace(key, "***")
        return text


def _server_message(exc: Exception) -> str:
    """The provider's own explanation from an error body, else the SDK's message."""
    body = getattr(exc, "body", None)
    # OpenAI's SDK keeps the inner `error` object, Anthropic's the whole `{"error": {...}}`.
    error = body.get("error", body) if isinstance(body, Mapping) else body
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str) and error.strip():
        return _clip(error.strip())
    return str(getattr(exc, "message", None) or exc)


__all__ = [
    "SDKChatModel",
    "logger",
    "parse_tool_arguments",
    "require_json_object",
    "with_extra_body",
]
