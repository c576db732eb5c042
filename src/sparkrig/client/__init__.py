"""Talk to any OpenAI-compatible endpoint with precise timing; scrape and diff /metrics."""

from sparkrig.client.endpoint import ChatRequest, CompletionRequest, EndpointClient
from sparkrig.client.records import RequestError, RequestRecord, SseEvent, TokenSource

__all__ = [
    "ChatRequest",
    "CompletionRequest",
    "EndpointClient",
    "RequestError",
    "RequestRecord",
    "SseEvent",
    "TokenSource",
]
