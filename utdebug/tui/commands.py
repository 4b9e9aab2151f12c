"""The command palette (ctrl+p): every action of the app, searchable by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from utdebug.tui.actions import ACTIONS, display_keys


class DebugCommands(Provider):
    """The app's actions (the same table as the key bindings and the help screen)."""

    async def discover(self) -> Hits:
        for spec in ACTIONS:
            yield DiscoveryHit(
                f"{spec.title} ({display_keys(spec)})",
                partial(self.app.run_action, spec.action),
                help=spec.help,
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for spec in ACTIONS:
            title = f"{spec.title} ({display_keys(spec)})"
            score = max(matcher.match(title), matcher.match(spec.help) * 0.5)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(title),
                    partial(self.app.run_action, spec.action),
                    text=title,
                    help=spec.help,
                )
