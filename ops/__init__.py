"""Operations CLI for the MangaAssist LLM endpoint: `python -m ops --help`."""
