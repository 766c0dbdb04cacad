"""The viewer's web app: its routes over the page modules, behind the gate (token, Host), and the server that runs it."""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
from functools import partial
from pathlib import Path

from orgtree_lang.viewer.gate import Gate, own_names
from orgtree_lang.viewer.page import Site, esc, frame

STATIC = Path(__file__).with_name("static")
POLL_SECONDS = 0.5  # how often a live page's files are looked at
# The page's own files only: no inline script runs, so a value that slipped through escaping could not act.
_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


def build_app(site: Site, *, poll_seconds: float = POLL_SECONDS, allow_hosts: tuple[str, ...] = ()):
    """The Starlette app serving `site`'s workspace: every request needs `site.token` and a Host of this machine
    (or one of `allow_hosts`)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from orgtree_lang.runtime.errors import PipeError
    from orgtree_lang.viewer import actions, artifacts, live, memory, modules, nodes, programs, runs, skills

    resumes: list[subprocess.Popen] = []

    def page(html: str, status: int = 200):
        return HTMLResponse(html, status_code=status, headers=_HEADERS)

    def not_found(what: str):
        return page(frame(site, "not found", f'<h1>Not found</h1><p class="error">{esc(what)}</p>'), 404)

    def read_run(ref: str):
        try:
            return runs.read_run(site.workspace, ref)
        except PipeError as err:
            return err

    def runs_list(request):
        return page(runs.runs_page(site))

    def run(request):
        view = read_run(request.path_params["run"])
        return not_found(str(view)) if isinstance(view, Exception) else page(runs.run_page(site, view))

    def node(request):
        view = read_run(request.path_params["run"])
        if isinstance(view, Exception):
            return not_found(str(view))
        return page(nodes.node_panel(site.workspace, view.nodes, request.query_params.get("id", "")))

    def stream(request, watched, render):
        events = live.updates(request.is_disconnected, watched, render, poll_seconds)
        return StreamingResponse(events, media_type="text/event-stream", headers=_HEADERS)

    def run_live(request):
        view = read_run(request.path_params["run"])
        if isinstance(view, Exception):
            return not_found(str(view))
        run_id = view.meta["run_id"]

        def render() -> str:
            return runs.run_body(site, runs.read_run(site.workspace, run_id))

        return stream(request, partial(live.run_files, site.workspace, run_id), render)

    def runs_live(request):
        return stream(request, partial(live.runs_files, site.workspace), partial(runs.runs_table, site))

    def module_list(request):
        return page(modules.modules_page(site))

    def module(request):
        html = modules.module_page(site, request.path_params["path"])
        return not_found(f"no saved module {request.path_params['path']}") if html is None else page(html)

    def program_list(request):
        return page(programs.programs_page(site))

    def program(request):
        relative = request.path_params["path"]
        html = programs.program_page(site, relative, request.query_params.get("entry") or None)
        return not_found(f"no program {relative} in this workspace") if html is None else page(html)

    def skill_list(request):
        return page(skills.skills_page(site))

    def skill(request):
        html = skills.skill_page(site, request.path_params["name"])
        return not_found(f"no skill {request.path_params['name']} in this workspace") if html is None else page(html)

    def blob(request):
        answer = artifacts.blob_answer(site.workspace, request.path_params["digest"],
                                       request.query_params.get("type", ""), request.query_params.get("download") == "1")
        if answer is None:
            return not_found(f"no blob {request.path_params['digest']} in this workspace")
        return Response(answer[0], headers=answer[1])

    def pad(request):
        return page(memory.pad_page(site))

    def insights(request):
        return page(memory.insights_page(site))

    async def act(request, action):
        for process in list(resumes):  # reap the runs and resumes that ended
            if process.poll() is not None:
                resumes.remove(process)
        try:
            actions.check_allowed(site, request.headers.get("x-pipe-token"))
            fields = actions.fields_of(await request.body())
            said = await run_in_threadpool(action, fields)
        except PipeError as err:  # refused here, or by the code `pipe reply` and `pipe resume` share
            said = str(err) + (f"; {err.hint}" if err.hint else "")
            return JSONResponse({"ok": False, "message": said}, status_code=getattr(err, "status", 409),
                                headers=_HEADERS)
        answer = said if isinstance(said, dict) else {"message": said}
        return JSONResponse({"ok": True, **answer}, headers=_HEADERS)

    async def reply(request):
        return await act(request, lambda f: actions.reply(site, f.get("run", ""), f.get("message"), f.get("text", "")))

    async def start(request):
        return await act(request, lambda f: actions.start_run(site, f, resumes))

    async def resume(request):
        return await act(request, lambda f: actions.resume(site, f.get("run", ""), resumes))

    routes = [Route("/", runs_list), Route("/live/runs", runs_live), Route("/runs/{run}", run),
              Route("/runs/{run}/live", run_live), Route("/runs/{run}/node", node),
              Route("/modules", module_list), Route("/modules/{path:path}", module),
              Route("/programs", program_list), Route("/programs/{path:path}", program),
              Route("/skills", skill_list), Route("/skills/{name}", skill),
              Route("/pad", pad), Route("/insights", insights), Route("/blobs/{digest}", blob),
              Route("/actions/run", start, methods=["POST"]), Route("/actions/reply", reply, methods=["POST"]),
              Route("/actions/resume", resume, methods=["POST"]),
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    gate = Middleware(Gate, token=site.token, names=own_names(site.host, allow_hosts), carry_to_page=site.allow_actions)
    app = Starlette(routes=routes, middleware=[gate])
    app.state.resumes = resumes
    return app


def serve(workspace: Path, host: str, port: int, allow_actions: bool, allow_hosts: tuple[str, ...] = ()) -> None:
    """Serve the viewer until interrupted; print its URL with the token first."""
    import uvicorn

    site = Site(Path(workspace).resolve(), allow_actions, secrets.token_urlsafe(24), host)
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)  # before the URL is printed: a browser opened on it at once must not be refused
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{listener.getsockname()[1]}/"
    print(f"pipe serve: the runs of {site.workspace} at {url}?token={site.token}", flush=True)
    print("every page needs that token: the link keeps it in a cookie of your browser", flush=True)
    if allow_actions:
        print(f"actions allowed: each needs the token {site.token} (the page opened from the link carries it)",
              flush=True)
    else:
        print("read-only: start with --allow-actions to start runs, reply to questions and resume runs from the "
              "page", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {host}: the token travels unencrypted, so anyone who can watch this network "
              f"can read these runs",
              file=sys.stderr, flush=True)
    app = build_app(site, allow_hosts=allow_hosts)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        for process in app.state.resumes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # the run goes on by itself; `pipe runs` shows it
                print(f"resume process {process.pid} still runs", file=sys.stderr)
