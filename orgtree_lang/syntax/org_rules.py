"""The parser's rules for the organization's statements (parallel, spawn, await, cancel, send, on message,
routes), mixed into its node builder."""

from __future__ import annotations

import dataclasses

from lark import Transformer, v_args

from orgtree_lang.syntax import nodes as n


@v_args(meta=True)
class OrgRules(Transformer):
    """Rules that build the organization's nodes; the node builder supplies _span, _tok, _ident and sink."""

    def for_parallel(self, meta, children):
        name, limit = children
        if name is not None and str(name) != "limit":
            self.sink.error(f"`parallel(...)` takes only `limit=N`, got `{name}`", self._tok(name),
                            "write `parallel(limit=4):` to run at most 4 iterations at once, or `parallel:`")
        return ("parallel", limit)

    def collect_stmt(self, meta, children):
        name, loop = children
        target = n.Name(self._tok(name), self._ident(name))
        if not loop.parallel:
            self.sink.error("only a parallel loop gives a value: `x = for ... parallel:`", self._span(meta),
                            "add `parallel` before the colon, or assign inside the loop")
        return dataclasses.replace(loop, span=self._span(meta), collect=target)

    def parallel_stmt(self, meta, children):
        name, limit, body = children
        if name is not None and str(name) != "limit":
            self.sink.error(f"`parallel(...)` takes only `limit=N`, got `{name}`", self._tok(name),
                            "write `parallel(limit=4):` to run at most 4 branches at once, or `parallel:`")
        return n.Parallel(self._span(meta), limit, body)

    def cancel_stmt(self, meta, children):
        return n.Cancel(self._span(meta), children[0])

    def send_stmt(self, meta, children):
        target, body, word, topic = children
        if word is not None and str(word) != "topic":
            self.sink.error(f"`send` takes only `topic=...` after the body, got `{word}=`", self._tok(word),
                            'write `send target, body, topic="billing"`')
        return n.Send(self._span(meta), target, body, topic)

    def on_stmt(self, meta, children):
        what, name, body = children
        if str(what) != "message":
            self.sink.error(f"expected `on message NAME:`, got `on {what}`", self._tok(what),
                            "a handler is written `on message m:` (messages are the only events so far)")
        return n.OnMessage(self._span(meta), str(name), self._tok(name), body)

    def spawn_expr(self, meta, children):
        call = children[0]
        if not isinstance(call, n.Call):
            self.sink.error("`spawn` needs a pipeline call, like `spawn fetch(url)`", self._span(meta),
                            "spawn starts a call of one of this module's pipelines as a node of its own")
            call = n.Call(self._span(meta), n.Name(self._span(meta), "spawn"), (), ())
        return n.Spawn(self._span(meta), call)

    def await_expr(self, meta, children):
        return n.Await(self._span(meta), children[0])

    def route_decl(self, meta, children):
        word, topic, pipeline = children
        if str(word) != "route":
            self.sink.error(f"expected a declaration (use, record, pipeline, test or route), got `{word}`",
                            self._tok(word), 'a route is written `route "topic" -> pipeline_name`')
        last = pipeline if pipeline is not None else topic
        return n.Route(self._tok(word).merge(self._tok(last)), self._string_value(topic), self._tok(topic),
                       self._ident(pipeline) if pipeline is not None else None,
                       self._tok(pipeline) if pipeline is not None else None)
