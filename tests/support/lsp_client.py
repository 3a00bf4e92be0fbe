"""A small synchronous Language Server Protocol client over stdio, for tests.

It speaks just enough LSP to drive a real language server the way an editor does:
``Content-Length`` framed JSON-RPC messages, requests with ids, notifications, and
reading until the matching response while remembering what else the server said
(``textDocument/publishDiagnostics`` above all). Requests *from* the server
(``workspace/configuration``, ``client/registerCapability``, ...) get a plain answer
so the server never waits on us.

Every read has a deadline: a server that falls silent makes the caller fail with
``LspTimeout`` (and the server's stderr) instead of hanging the test run.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

JSON = Any


class LspError(RuntimeError):
    """The server answered a request with a JSON-RPC error, or died."""


class LspTimeout(LspError):
    """The server did not send what we waited for before the deadline."""


class LspClient:
    """One language-server process, spoken to over its stdin/stdout.

    Use as a context manager: leaving it sends ``shutdown`` + ``exit`` and makes sure
    the process is gone.
    """

    def __init__(
        self,
        command: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = 20.0,
        settings: JSON = None,
    ) -> None:
        #: Default deadline, in seconds, of every wait.
        self.timeout = timeout
        #: Answer to ``workspace/configuration`` requests (looked up by ``section``).
        self.settings: JSON = settings or {}
        #: Latest diagnostics per document URI, from ``textDocument/publishDiagnostics``.
        self.diagnostics: dict[str, list[JSON]] = {}
        #: Every notification the server sent, in order (method, params).
        self.notifications: list[tuple[str, JSON]] = []
        self._next_id = 0
        self._stderr: list[str] = []
        self._inbox: queue.Queue[JSON | None] = queue.Queue()
        self._proc = subprocess.Popen(
            [str(part) for part in command],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # Reader threads turn the blocking pipes into a queue we can wait on with a timeout.
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # --- context manager ----------------------------------------------------------------

    def __enter__(self) -> LspClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Ask the server to shut down politely; kill it if it does not."""
        if self._proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=2)
                self.notify("exit", None)
                self._proc.wait(timeout=2)
            except (LspError, OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()

    # --- wire format --------------------------------------------------------------------

    def _send(self, message: JSON) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        header = f"Content-Length: {len(body)}\r\n\r\n".encode("ascii")
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(header + body)
            self._proc.stdin.flush()
        except OSError as error:
            raise LspError(f"cannot write to the server: {error}{self._stderr_tail()}") from error

    def _read_stdout(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        try:
            while True:
                length = None
                while True:  # headers, up to the empty line
                    line = stream.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                if length is None:
                    continue
                self._inbox.put(json.loads(stream.read(length).decode("utf-8")))
        finally:
            self._inbox.put(None)  # end of stream

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line.decode("utf-8", "replace"))

    def _stderr_tail(self) -> str:
        tail = "".join(self._stderr[-20:]).strip()
        return f"\n--- server stderr (tail) ---\n{tail}" if tail else ""

    # --- messages -----------------------------------------------------------------------

    def notify(self, method: str, params: JSON) -> None:
        """Send a notification (no id, no answer)."""
        self._send({"method": method, "params": params})

    def request(self, method: str, params: JSON, *, timeout: float | None = None) -> JSON:
        """Send a request and return its result, handling everything that arrives first."""
        self._next_id += 1
        request_id = self._next_id
        self._send({"id": request_id, "method": method, "params": params})
        answer = self._wait(
            lambda msg: msg.get("id") == request_id and "method" not in msg,
            timeout,
            what=f"the answer to {method!r}",
        )
        if "error" in answer:
            raise LspError(f"{method} failed: {answer['error']}{self._stderr_tail()}")
        return answer.get("result")

    def wait_for_diagnostics(self, uri: str, *, timeout: float | None = None) -> list[JSON]:
        """The diagnostics published for ``uri`` since it was opened, waiting for them."""
        if uri not in self.diagnostics:
            self._wait(
                lambda msg: (
                    msg.get("method") == "textDocument/publishDiagnostics"
                    and msg["params"]["uri"] == uri
                ),
                timeout,
                what=f"diagnostics for {uri}",
            )
        return self.diagnostics[uri]

    def _wait(self, matches: Callable[[JSON], bool], timeout: float | None, *, what: str) -> JSON:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            left = deadline - time.monotonic()
            try:
                message = self._inbox.get(timeout=max(left, 0))
            except queue.Empty:
                waited = self.timeout if timeout is None else timeout
                raise LspTimeout(
                    f"timed out after {waited:g} s waiting for {what}{self._stderr_tail()}"
                ) from None
            if message is None:
                self._inbox.put(None)  # keep the end-of-stream marker for later waits
                raise LspError(
                    f"the server exited (status {self._proc.poll()}) while waiting for {what}"
                    f"{self._stderr_tail()}"
                )
            self._handle(message)
            if matches(message):
                return message

    def _handle(self, message: JSON) -> None:
        method = message.get("method")
        if method is None:
            return  # a response; the waiter looks at it
        params = message.get("params")
        if "id" in message:  # a request from the server: always answer it
            self._send({"id": message["id"], "result": self._answer_server(method, params)})
            return
        self.notifications.append((method, params))
        if method == "textDocument/publishDiagnostics":
            self.diagnostics[params["uri"]] = params["diagnostics"]

    def _answer_server(self, method: str, params: JSON) -> JSON:
        if method == "workspace/configuration":
            return [self._setting(item.get("section")) for item in params.get("items", [])]
        return None  # registerCapability, workDoneProgress/create, ...: null is "ok"

    def _setting(self, section: str | None) -> JSON:
        value = self.settings
        for part in (section or "").split(".") if section else []:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    # --- editor-level helpers -----------------------------------------------------------

    def initialize(self, root: Path, *, capabilities: JSON = None) -> JSON:
        """``initialize`` with ``root`` as the workspace, then ``initialized``."""
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": capabilities or {},
            },
        )
        self.notify("initialized", {})
        return result

    def open_document(self, path: Path, text: str, *, language_id: str = "yaml") -> str:
        """``textDocument/didOpen``; returns the document URI."""
        uri = path.as_uri()
        self.diagnostics.pop(uri, None)  # what was published before is stale
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}},
        )
        return uri

    def complete(self, uri: str, line: int, character: int) -> list[JSON]:
        """``textDocument/completion`` at a zero-based position; returns the items."""
        result = self.request(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
        )
        if result is None:
            return []
        return result["items"] if isinstance(result, dict) else result
