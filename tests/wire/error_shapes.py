"""Error bodies and events exactly as servers send them, for the wire and client tests. The
vLLM ones are the text vLLM 0.26.0 sends; each cites the source that builds it, and the one a
live server was seen to send is read from that capture (tests/fixtures/vllm/live/)."""

from tests.vllm_live import capture

# vllm/entrypoints/generate/base/serving.py `create_streaming_error_response`: json.dumps of
# `create_error_response(e).model_dump()` (vllm/entrypoints/serve/utils/error_response.py), an
# `ErrorResponse(error=ErrorInfo(message, type, param, code))` of
# vllm/entrypoints/openai/engine/protocol.py. The chat and completion stream generators send it
# for any exception; vllm/v1/engine/async_llm.py `generate` raises `EngineGenerateError()` with
# no text for anything but a ValueError, so the message is "". Seen live: the only event of the
# json-schema stream when lm-format-enforcer was not installed (the data of its first line).
VLLM_ENGINE_GENERATE_ERROR_EVENT = (
    capture("plain", "chat-json-schema-stream").decode().splitlines()[0].removeprefix("data: ")
)
# `_convert_generation_error_to_streaming_response`: a request the engine finished with
# finish_reason "error" (a grammar that failed to compile in the engine core, a KV load failure)
VLLM_GENERATION_ERROR_EVENT = (
    '{"error": {"message": "Internal server error", "type": "InternalServerError", '
    '"param": null, "code": 500}}'
)
# the same ErrorResponse as a non-streamed body: vllm/entrypoints/serve/utils/server_utils.py
# `engine_error_handler` / `exception_handler` return JSONResponse(err.model_dump()), which
# starlette renders without spaces. A ValueError (here from vllm/sampling_params.py
# `_validate_structured_outputs` with --structured-outputs-config.backend xgrammar and no
# xgrammar) is a BadRequestError, 400.
VLLM_BAD_SCHEMA_BODY = (
    '{"error":{"message":"Failed to transform json schema into a grammar: No module named '
    '\'xgrammar\'","type":"BadRequestError","param":null,"code":400}}'
)
# `validation_exception_handler`: a request pydantic refused; type is HTTPStatus.phrase, the
# message "N validation error(s):" and then one of pydantic's error dicts a line (this one made up)
VLLM_VALIDATION_BODY = (
    "{\"error\":{\"message\":\"1 validation error:\\n  {'type': 'missing', 'loc': "
    "('body', 'messages'), 'msg': 'Field required', 'input': {'model': 'm'}}\","
    '"type":"Bad Request","param":"messages","code":400}}'
)
# vLLM before ErrorInfo (vllm/entrypoints/openai/protocol.py `ErrorResponse` with
# `object: str = "error"` at the top level), and SGLang's to this day
OLD_VLLM_BODY = (
    '{"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError", '
    '"param": null, "code": 404}'
)
# llama.cpp tools/server/server-common.cpp `format_error_response`, wrapped in {"error": ...}
LLAMACPP_BODY = (
    '{"error": {"code": 400, "message": "the request exceeds the available context size", '
    '"type": "exceed_context_size_error"}}'
)
