"""Determined's (``det``'s) short spellings of ``pedl`` commands: ``pedl e ls``, ``pedl t logs``.

``det`` declares a command as ``"e|xperiment"`` (``e`` and ``experiment``) or ``"list ls"``
(``list`` and ``ls``); the same aliases work here, in every group made with :class:`AliasGroup`.
"""

from __future__ import annotations

import click

ALIASES: dict[str, str] = {
    "e": "experiment",
    "t": "trial",
    "c": "checkpoint",
    "m": "model",
    "u": "user",
    "a": "agent",
    "s": "slot",
    "j": "job",
    "tpl": "template",
    "w": "workspace",
    "p": "project",
    "ls": "list",
    "lt": "list-trials",
    "lc": "list-checkpoints",
    "unpause": "activate",
    "rm": "remove",
}
"""``det``'s alias -> the command it names (in whichever group has that command)."""


class AliasGroup(click.Group):
    """A group whose commands are also found by ``det``'s aliases (:data:`ALIASES`)."""

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in ALIASES:
            command = super().get_command(ctx, ALIASES[name])
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        return (command.name if command is not None else name), command, rest
