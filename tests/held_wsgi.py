"""The app as gunicorn serves it, except that the first answer asked to be held (header
``X-Hold-Answer``) is held after the app made it, and so after its write committed: the
worker says so with a file named by its pid in ``$HOLD_DIR/held``, and waits there to be
killed (tests/test_worker_kill.py). Answers asked to be held later are not held."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from wsgiref.types import StartResponse, WSGIEnvironment

from flowdrop_web.wsgi import application as app


def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    answer = app(environ, start_response)
    if environ.get("HTTP_X_HOLD_ANSWER"):
        held = Path(os.environ["HOLD_DIR"], "held")
        try:
            held.mkdir()
        except FileExistsError:
            return answer
        (held / str(os.getpid())).touch()
        time.sleep(60)
    return answer
