"""The token-classification family: one forward pass labels every response token (encoders, or QLoRA decoders)."""
