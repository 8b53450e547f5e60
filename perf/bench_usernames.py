"""The sign-up check for look-alike usernames at scale: prints what one check costs.

``accounts.selectors.username_look_alike`` reads every username and compares skeletons. This
fills a scratch SQLite database (``--database``, default /tmp/gpuatlas_perf_usernames.sqlite3,
emptied first) with ``--users`` names and times the worst case, a name like no other (every
skeleton computed), median of ``--runs`` checks; and the skeleton alone per 1,000 names.

    .venv/bin/python -m perf.bench_usernames --users 10000 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database", type=Path, default=Path("/tmp/gpuatlas_perf_usernames.sqlite3"))  # noqa: S108
    args = parser.parse_args()
    if args.database.exists():
        args.database.unlink()
    os.environ["DATABASE_URL"] = f"sqlite:///{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from accounts.selectors import username_look_alike
    from accounts.usernames import username_skeleton

    call_command("migrate", "auth", verbosity=0)
    user_model = get_user_model()
    names = [f"user_{i:07d}" for i in range(max(args.users))]
    started = time.perf_counter()
    for name in names[:1000]:
        username_skeleton(name)
    print(f"skeleton: {(time.perf_counter() - started) * 1000:.1f} ms per 1,000 names")
    present = 0
    for count in sorted(args.users):
        user_model.objects.bulk_create([user_model(username=name) for name in names[present:count]], batch_size=5000)
        present = count
        timings = []
        for _ in range(args.runs):
            started = time.perf_counter()
            assert username_look_alike(username="someone-new") is None
            timings.append(time.perf_counter() - started)
        print(
            f"{count:>9,} users: {statistics.median(timings) * 1000:.0f} ms per sign-up check (median of {args.runs})"
        )


if __name__ == "__main__":
    main()
