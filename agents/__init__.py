"""The model layer of utdebug (model clients, prompts, parsers, roles).

This is the only package that may import litellm, and only lazily, inside functions.
"""
