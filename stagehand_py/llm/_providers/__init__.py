"""Provider adapters: each translates our request to one wire format and back."""
