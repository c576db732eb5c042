"""Pure checks of a reply's text, shared by guards, bench and the gateway's live guards: text
degeneration (`text`), why a reply came back empty (`empty_content`), JSON-schema problems
(`schema`). Nothing here sends a request; callers hand in what they received."""
