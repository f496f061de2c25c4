"""What every botocore session and client builds again although it comes out the same, built once per test
process: the tests open a session per CLI command and a client per service (hundreds per file), and
botocore's own start-up was a large part of the ops tests' CPU.

Shared, each the same value botocore would build anew (behaviour unchanged; nothing here is a stand-in):
- the loader of botocore's JSON service models (read-only once loaded);
- one service model per service and API version (botocore builds a ServiceModel of the loader's JSON per
  client, and its caches with it: every client looks through all its operations for endpoint discovery);
- one client class per service and API version (a method per operation: ~5 ms for SageMaker's), as the
  same session type's handlers build it (no test adds its own);
- a new session's built-in event handlers (botocore.handlers.BUILTIN_HANDLERS plus what moto appended):
  registering ~120 handlers checks each one's signature and aliases its event name; the session gets a
  copy of an emitter that registered the same list, as botocore itself gives each client a copy of its
  session's emitter (botocore/client.py, `copy.copy(self._event_emitter)`). Rebuilt when the list changes;
  a session created with its own event hooks registers as botocore does;
- the event aliaser's name cache (a pure function of the name and botocore's EVENT_ALIASES), which every
  session and client otherwise starts empty.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import botocore.client
import botocore.handlers
import botocore.hooks
import botocore.loaders
import botocore.model
import botocore.session
import pytest

EMPTY_TRIE = {"chunk": None, "children": {}, "values": None}  # botocore.hooks._PrefixTrie's fresh root


@contextmanager
def shared_botocore() -> Iterator[None]:
    loader = botocore.loaders.create_loader()
    load_model = botocore.client.ClientCreator._load_service_model
    build_class = botocore.client.ClientCreator._create_client_class
    register_builtin = botocore.session.Session._register_builtin_handlers
    alias_init = botocore.hooks.EventAliaser.__init__
    models: dict[tuple[str, str | None], botocore.model.ServiceModel] = {}
    classes: dict[tuple[str, str], type] = {}
    emitters: dict[tuple, botocore.hooks.HierarchicalEmitter] = {}
    aliased_names: dict[str, str] = {}

    def shared_model(creator: botocore.client.ClientCreator, service_name: str, api_version: str | None = None) -> Any:
        key = (service_name, api_version)
        if key not in models:
            models[key] = load_model(creator, service_name, api_version)
        return models[key]

    def shared_class(creator: botocore.client.ClientCreator, service_name: str, service_model: Any) -> type:
        key = (service_name, service_model.api_version)
        if key not in classes:
            classes[key] = build_class(creator, service_name, service_model)
        return classes[key]

    def copied_builtin_handlers(session: botocore.session.Session, events: Any) -> None:
        emitter = session._original_handler
        if type(emitter) is not botocore.hooks.HierarchicalEmitter or emitter._handlers._root != EMPTY_TRIE:
            register_builtin(session, events)  # the caller's own event hooks: botocore's way
            return
        key = tuple((spec[0], id(spec[1]), spec[2:]) for spec in botocore.handlers.BUILTIN_HANDLERS)
        if key not in emitters:
            registered = botocore.session.Session(include_builtin_handlers=False)
            register_builtin(registered, registered._events)
            emitters[key] = registered._original_handler
        template = emitters[key]
        emitter._handlers = copy.copy(template._handlers)
        emitter._unique_id_handlers = copy.copy(template._unique_id_handlers)
        emitter._lookup_cache = {}

    def shared_alias_cache(aliaser: botocore.hooks.EventAliaser, *args: Any, **kwargs: Any) -> None:
        alias_init(aliaser, *args, **kwargs)
        if aliaser._event_aliases == botocore.hooks.EVENT_ALIASES:
            aliaser._alias_name_cache = aliased_names

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", lambda *args, **kwargs: loader)
        patch.setattr(botocore.client.ClientCreator, "_load_service_model", shared_model)
        patch.setattr(botocore.client.ClientCreator, "_create_client_class", shared_class)
        patch.setattr(botocore.session.Session, "_register_builtin_handlers", copied_builtin_handlers)
        patch.setattr(botocore.hooks.EventAliaser, "__init__", shared_alias_cache)
        yield
