"""World model and renderer access (client, protocol, embedded server). Knows nothing of datasets or labels."""
