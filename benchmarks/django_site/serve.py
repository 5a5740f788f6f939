"""Prepares and serves the benchmark's Django admin on 127.0.0.1.

    python benchmarks/django_site/serve.py --prepare       # sqlite db, superuser, 200 books
    python benchmarks/django_site/serve.py --port 8000     # prepare, then runserver (foreground)

snapshot_bench.py and the local-model benchmarks import ``start()`` and ``login()``. Login: admin / admin. The database lives under the
repo's gitignored .bench/django/.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
USERNAME = PASSWORD = "admin"
BOOK_COUNT = 200
CHANGELIST = "/admin/books/book/"
LOGIN = "/admin/login/"

_WORDS = (
    "silent river winter garden empire glass night atlas ember orchard harbor crown "
    "shadow letters journey mountain salt copper lantern island storm meadow"
).split()
_AUTHORS = [
    "Ada Lovelace", "Mary Shelley", "Jorge Borges", "Italo Calvino", "Toni Morrison",
    "Ursula Le Guin", "Chinua Achebe", "Wislawa Szymborska", "Primo Levi", "Clarice Lispector",
]


def prepare() -> None:
    """Create the schema, the superuser and the books, once (safe to call again)."""
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchsite.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    Path(settings.DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    call_command("migrate", verbosity=0)
    from books.models import Book

    users = get_user_model()
    if not users.objects.filter(username=USERNAME).exists():
        users.objects.create_superuser(USERNAME, "admin@example.test", PASSWORD)
    if Book.objects.count() != BOOK_COUNT:
        import datetime as dt

        Book.objects.all().delete()
        rng = random.Random(42)  # the same 200 books on every machine
        genres = [g for g, _ in Book.GENRES]
        Book.objects.bulk_create(
            Book(
                title=f"The {rng.choice(_WORDS).title()} of {rng.choice(_WORDS).title()} {i}",
                author=rng.choice(_AUTHORS),
                genre=rng.choice(genres),
                published=dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(27000)),
                price=f"{rng.randrange(500, 6000) / 100:.2f}",
                in_stock=rng.random() < 0.7,
            )
            for i in range(1, BOOK_COUNT + 1)
        )


async def login(page, base: str) -> None:
    """Sign ``page`` (a Playwright page) in to the admin at ``base`` as admin/admin."""
    await page.goto(base + LOGIN)
    await page.fill("#id_username", USERNAME)
    await page.fill("#id_password", PASSWORD)
    await page.click("input[type=submit]")
    await page.wait_for_url("**/admin/")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(port: int | None = None, timeout: float = 60) -> tuple[subprocess.Popen, str]:
    """Prepare the db in a child process, start runserver; return (process, base url)."""
    subprocess.run([sys.executable, str(Path(__file__)), "--prepare"], check=True)
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "manage.py"), "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Django runserver exited with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"Django runserver did not listen on 127.0.0.1:{port} within {timeout}s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", action="store_true", help="only create the db and exit")
    parser.add_argument("--port", type=int, default=8000)
    opts = parser.parse_args()
    prepare()
    if not opts.prepare:
        os.chdir(HERE)
        os.execv(
            sys.executable,
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{opts.port}", "--noreload"],
        )
