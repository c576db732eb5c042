"""The wire layer below client and gateway: server-sent events from bytes (and back), and the
OpenAI reply fields read without trusting their types. It imports nothing of sparkrig but
`errors`, so both the client and the gateway can stand on it."""
