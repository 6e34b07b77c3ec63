"""The core: JSON-RPC framing, the message types, the codec and the session loop."""
