"""`rook profile show | use | list | rename`, and the help of every profile command."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml


def cli(rook_cli, ws, *args, env=None):
    r = rook_cli("profile", args[0], "--workspace", str(ws.root), *args[1:], env=env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def two_profiles(ws):
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "a"}\'\n')
    ws.profile(
        {
            "id": "staging",
            "name": "Staging",
            "hooks": {
                "execute": {
                    "http": {
                        "url": "https://staging.example/v1/chat",
                        "headers": {
                            "Authorization": "Bearer {{env.STAGING_TOKEN}}",
                            "X-Api-Key": "literal-key-0123456789",
                        },
                        "body": {"q": "{{goal}}"},
                    }
                }
            },
            "env": [
                {"variable": "STAGING_TOKEN", "purpose": "bearer token of staging"},
                {"variable": "OTHER_VAR", "purpose": "something else"},
            ],
            "capabilities": {"multi_turn": True},
        },
        active=False,
    )
    ws.profile({"id": "local", "hooks": {"execute": "scripts/a.sh"}}, active=True)


def test_show_never_shows_secrets(rook_workspace, rook_cli):
    ws = rook_workspace
    two_profiles(ws)
    r = cli(rook_cli, ws, "show", "Staging", env={"STAGING_TOKEN": "tok-very-secret-value"})
    assert r.exit_code == 0, r.stderr
    assert "Staging (id staging)" in r.stdout and "[active]" not in r.stdout
    assert "STAGING_TOKEN: set - bearer token of staging" in r.stdout
    assert "OTHER_VAR: NOT SET - something else" in r.stdout
    assert "tok-very-secret-value" not in r.stdout
    # exported empty, as a CI job does when its secret is missing: said as rook run says it
    r = cli(rook_cli, ws, "show", "staging", env={"STAGING_TOKEN": "tok-very-secret-value",
                                                   "OTHER_VAR": ""})
    assert "OTHER_VAR: NOT SET (set, but empty) - something else" in r.stdout, r.stdout
    assert "literal-key-0123456789" not in r.stdout and "[hidden" in r.stdout
    assert "Bearer {{env.STAGING_TOKEN}}" in r.stdout
    doc = json.loads(cli(rook_cli, ws, "show", "staging", "--json").stdout)
    assert doc["env"][0] == {
        "variable": "STAGING_TOKEN",
        "purpose": "bearer token of staging",
        "set": False,
    }
    assert doc["capabilities"]["declared"] == {"multi_turn": True}


def test_use_and_list_mark_the_active_one(rook_workspace, rook_cli):
    ws = rook_workspace
    two_profiles(ws)
    (ws.agent_dir / "profiles" / "broken.yaml").write_text("id: broken\nhooks: {}\n")
    r = cli(rook_cli, ws, "list")
    rows = {
        ln.split()[1] if ln.startswith("*") else ln.split()[0]: ln
        for ln in r.stdout.splitlines()[2:]
    }
    assert rows["local"].startswith("*") and not rows["staging"].startswith("*")
    assert "invalid" in rows["broken"]
    assert r.stdout.splitlines()[0].split()[:2] == ["active", "id"], r.stdout  # every column titled
    r = cli(rook_cli, ws, "use", "Staging")
    assert r.exit_code == 0 and "active profile: staging" in r.stdout
    assert (ws.agent_dir / "profiles" / "active").read_text().strip() == "staging"
    listed = json.loads(cli(rook_cli, ws, "list", "--json").stdout)
    assert [p["id"] for p in listed if p["active"]] == ["staging"]
    assert cli(rook_cli, ws, "use", "nope").exit_code == 2


def test_the_only_profile_is_shown_as_the_one_a_run_uses(rook_workspace, rook_cli):
    """With no profiles/active and one profile, rook run uses it; list marked
    nothing and show said nothing of it."""
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "a"}\'\n')
    ws.profile({"id": "local", "hooks": {"execute": "scripts/a.sh"}}, active=False)
    assert not (ws.agent_dir / "profiles" / "active").exists()
    r = cli(rook_cli, ws, "list")
    assert r.exit_code == 0 and "rook run uses local: the only profile" in r.stdout, r.stdout
    assert not r.stdout.splitlines()[2].startswith("*"), r.stdout  # active is still profiles/active
    [row] = json.loads(cli(rook_cli, ws, "list", "--json").stdout)
    assert row["active"] is False and row["used"] is True, row
    r = cli(rook_cli, ws, "show")
    assert r.stdout.splitlines()[0] == "local (id local)  [used: the only profile]", r.stdout
    doc = json.loads(cli(rook_cli, ws, "show", "--json").stdout)
    assert doc["active"] is False and doc["used"] is True, doc
    # with an active one, it is the one used
    two_profiles(ws)
    [used] = [p["id"] for p in json.loads(cli(rook_cli, ws, "list", "--json").stdout) if p["used"]]
    assert used == "local"
    assert "the only profile" not in cli(rook_cli, ws, "list").stdout
    assert cli(rook_cli, ws, "show", "local").stdout.splitlines()[0] == "local (id local)  [active]"
    doc = json.loads(cli(rook_cli, ws, "show", "staging", "--json").stdout)
    assert doc["used"] is False


def test_use_refuses_a_folder_named_active_as_a_mistake(rook_workspace, rook_cli):
    """A folder profiles/active made 'rook profile use' fail with exit 1 ('cannot
    write ...: Is a directory'): it is the user's mistake (exit 2), and kept."""
    ws = rook_workspace
    two_profiles(ws)
    active = ws.agent_dir / "profiles" / "active"
    active.unlink()
    active.mkdir()
    (active / "notes.txt").write_text("mine\n")
    r = cli(rook_cli, ws, "use", "staging")
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert f"{active}: a folder" in r.stderr and "move the folder away" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert (active / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("command", ["show", "use", "test", "fix", "rename"])
@pytest.mark.parametrize("name", ["", " "])
def test_an_empty_profile_name_names_no_profile(rook_workspace, rook_cli, command, name):
    """`rook profile show "$P"` with P unset said "profile '' not found in DIR", as if
    a profile could be called so, where `rook run --profile ''` says it names none."""
    ws = rook_workspace
    two_profiles(ws)
    r = cli(rook_cli, ws, command, name, *(["New name"] if command == "rename" else []))
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert f"NAME {name!r}: names no profile; give its id, file name or name" in r.stderr, r.stderr
    assert "not found" not in r.stderr


def test_a_name_longer_than_a_file_name_is_looked_up_not_refused(rook_workspace, rook_cli):
    """A name longer than a file name can be (255 bytes) ended every command that
    took it with '.../profiles/NAME.yaml: File name too long': a profile renamed so
    (rook profile rename allows it) could not be picked by its name, and a run
    reference that long was not said to be no run."""
    ws = rook_workspace
    two_profiles(ws)
    long = "j" * 300
    assert cli(rook_cli, ws, "rename", "staging", long).exit_code == 0
    r = cli(rook_cli, ws, "show", long)
    assert r.exit_code == 0 and "(id staging)" in r.stdout, r.stdout + r.stderr
    r = cli(rook_cli, ws, "use", long)
    assert r.exit_code == 0 and "active profile: staging" in r.stdout, r.stdout + r.stderr
    r = cli(rook_cli, ws, "show", "k" * 300)
    assert r.exit_code == 2 and "File name too long" not in r.stderr, r.stderr
    assert f"profile {'k' * 300!r} not found" in r.stderr, r.stderr
    for args in (["report", "r" * 300], ["runs", "show", "r" * 300]):
        r = rook_cli(*args, "--workspace", str(ws.root))
        assert r.exit_code == 2 and "File name too long" not in r.stderr, r.stderr
        assert f"run {'r' * 300}: no " in r.stderr, r.stderr


def test_a_folder_named_as_the_profile_file_is_said_to_be_one(rook_workspace, rook_cli):
    """profiles/desk.yaml a folder: rook profile show desk said "profile 'desk'
    not found ... (profiles: desk)", and rook run "active: names 'desk', which is
    no profile here (profiles: desk)", contradicting themselves. They name the
    folder, as rook profile list does; exit 2."""
    ws = rook_workspace
    two_profiles(ws)
    folder = ws.agent_dir / "profiles" / "desk.yaml"
    folder.mkdir()
    (ws.agent_dir / "profiles" / "active").write_text("desk\n")
    for args in (["show", "desk"], ["use", "desk"], ["test", "desk"], ["show"]):
        r = cli(rook_cli, ws, *args)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert f"{folder}: a folder, not a profile file" in r.stderr, (args, r.stderr)
        assert "(profiles: desk" not in r.stderr, (args, r.stderr)
    r = rook_cli("run", "--workspace", str(ws.root))
    assert r.exit_code == 2 and f"{folder}: a folder, not a profile file" in r.stderr, r.stderr
    assert not (ws.agent_dir / "runs").exists() or not list((ws.agent_dir / "runs").iterdir())


def test_an_unknown_profile_is_told_with_the_ids_rook_profile_use_takes(rook_workspace, rook_cli):
    """profiles/t.yaml holding the id other, profiles/active naming nope: rook run
    said "(profiles: local, staging, t)", file names, while rook profile list shows
    the id other. The message lists ids, the file name after one that differs."""
    ws = rook_workspace
    two_profiles(ws)
    pdir = ws.agent_dir / "profiles"
    (pdir / "t.yaml").write_text("id: other\nhooks:\n  execute: scripts/a.sh\n")
    (pdir / "active").write_text("nope\n")
    listing = "(profiles: local, staging, other (t.yaml))"
    r = rook_cli("run", "--workspace", str(ws.root))
    assert r.exit_code == 2 and listing in r.stderr, r.stderr
    r = cli(rook_cli, ws, "show", "nope")
    assert r.exit_code == 2 and listing in r.stderr, r.stderr
    assert "other" in cli(rook_cli, ws, "list").stdout
    for name in ("other", "t"):  # what the listing offers, rook profile use takes
        r = cli(rook_cli, ws, "use", name)
        assert r.exit_code == 0 and "active profile: other" in r.stdout, (name, r.stderr)


def test_rename_changes_the_name_only(rook_workspace, rook_cli):
    ws = rook_workspace
    two_profiles(ws)
    path = ws.agent_dir / "profiles" / "staging.yaml"
    path.write_text("# staging, by hand\n" + path.read_text())
    r = cli(rook_cli, ws, "rename", "staging", "Staging (EU)")
    assert r.exit_code == 0, r.stderr
    data = yaml.safe_load(path.read_text())
    assert data["name"] == "Staging (EU)" and data["id"] == "staging"
    assert path.read_text().startswith("# staging, by hand\n")
    assert cli(rook_cli, ws, "show", "Staging (EU)").exit_code == 0


def test_rename_to_what_another_profile_is_called_is_refused(rook_workspace, rook_cli):
    """rook profile rename staging local, local the other profile's id, was accepted:
    rook run --profile local and every lookup of 'local' then picked the other
    one (an id comes first), and a name two profiles share picks neither."""
    ws = rook_workspace
    two_profiles(ws)
    path = ws.agent_dir / "profiles" / "staging.yaml"
    before = path.read_text()
    r = cli(rook_cli, ws, "rename", "staging", "local")
    assert r.exit_code == 2 and "Traceback" not in r.stderr, r.stderr
    assert "the profile local (local.yaml) is already called 'local'" in r.stderr, r.stderr
    local = ws.agent_dir / "profiles" / "local.yaml"
    r = cli(rook_cli, ws, "rename", "local", "Staging")
    assert r.exit_code == 2, r.stderr
    assert "the profile staging (staging.yaml) is already called 'Staging'" in r.stderr, r.stderr
    assert path.read_text() == before and "Staging" not in local.read_text()
    assert cli(rook_cli, ws, "rename", "staging", "staging").exit_code == 0  # its own id


def test_profile_commands_help(rook_cli):
    for cmd in ("add", "test", "fix", "show", "use", "list", "rename"):
        r = rook_cli("profile", cmd, "--help")
        assert r.exit_code == 0 and "Examples:" in r.stdout


def test_show_hides_secrets_in_urls_commands_and_hook_env(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.profile(
        {
            "id": "leaky",
            "hooks": {
                "prepare": {
                    "http": {
                        "url": "http://bob:PASSWORD-in-url-41@127.0.0.1:9/token"
                        "?key=LITERAL-key-42&access_token=tok-in-query-43&model=small",
                        "query": {"sig": "sig-in-query-44", "api_key": "{{env.LEAKY_KEY}}"},
                        "form": {"grant_type": "client_credentials"},
                        "save": {"token": "access_token"},
                    }
                },
                "execute": {
                    "ruhroh": {
                        "command": "bash wrapper.sh --api-key ARG-secret-45 "
                        "-H 'Authorization: Bearer hdr-secret-46' --model small"
                    }
                },
                "close": {
                    "http": {
                        "url": "http://127.0.0.1:9/bye?note=sk-shapedkey00047",
                        "headers": {"X-Custom": "Basic dXNlcjpzM2NyZXQtcGFzcw=="},
                    }
                },
            },
            "env": [{"variable": "LEAKY_KEY", "purpose": "the key"}],
            "hook_env": {
                "OPENAI_API_KEY": "sk-hookenv-secret-48",
                "DB_PASSWORD": "hunter2-49",
                "ANTHROPIC_KEY": "plain-looking-50",
                "SOMETHING": "sk-shapedvalue0051",
                "MODE": "fast",
                "TOKEN_FILE": "/tmp/token.txt",
            },
        }
    )
    secrets = [f"{n}" for n in range(41, 52)]
    r = cli(rook_cli, ws, "show", "leaky")
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(cli(rook_cli, ws, "show", "leaky", "--json").stdout)
    for text in (r.stdout, json.dumps(doc)):
        text = text.replace(str(ws.root), "WS")  # pytest's tmp path may hold "-42" too
        for n in secrets:
            assert f"-{n}" not in text and f"0{n}" not in text, (n, text)
    hooks = doc["hooks"]
    url = hooks["prepare"]["http"]["url"]
    assert url == (
        "http://bob:[hidden]@127.0.0.1:9/token?key=[hidden]&access_token=[hidden]&model=small"
    )
    assert hooks["prepare"]["http"]["query"] == {
        "sig": "[hidden: written literally; move it to env]",
        "api_key": "{{env.LEAKY_KEY}}",
    }
    assert hooks["prepare"]["http"]["save"] == {"token": "access_token"}  # a path, not a secret
    assert hooks["execute"]["ruhroh"]["command"] == (
        "bash wrapper.sh --api-key [hidden] -H 'Authorization: Bearer [hidden]' --model small"
    )
    assert hooks["close"]["http"]["url"] == "http://127.0.0.1:9/bye?note=[hidden]"
    assert "dXNlcjpz" not in r.stdout and "dXNlcjpz" not in json.dumps(doc)  # under any name
    hidden = "[hidden: written literally; move it to env]"
    assert doc["hook_env"] == {
        "OPENAI_API_KEY": hidden,
        "DB_PASSWORD": hidden,
        "ANTHROPIC_KEY": hidden,
        "SOMETHING": hidden,
        "MODE": "fast",
        "TOKEN_FILE": "/tmp/token.txt",
    }
    assert "MODE=fast" in r.stdout and f"OPENAI_API_KEY={hidden}" in r.stdout
    assert "bob:[hidden]@127.0.0.1:9" in r.stdout


BASH_C_WRAPPER = r"""
#!/bin/bash
cat > "$RUHROH_RESULT_PATH" <<JSON
{"version": "ruhroh_run_agent_result_v1", "status": "goal_satisfied", "output": "fine"}
JSON
echo '{"status": "goal_satisfied"}'
"""


def test_a_secret_in_a_bash_c_script_is_hidden_wherever_the_command_is_shown(rook_workspace, rook_cli):
    """A wrapper's command ``bash -c 'w.sh --api-key KEY'`` was shown whole by
    ``rook profile show``, ``rook profile test`` ('trying the agent: ...') and in
    a run's ``profile.yaml``: the script after ``-c`` was one word, read for no
    secret. Its command lines are read as a command line is now."""
    ws = rook_workspace
    wrapper = ws.script("w.sh", BASH_C_WRAPPER)
    script = (f"A=1 DB_PASSWORD=pw-4411 {wrapper} --api-key pl41n-9931 --token=tk-7723 "
              "&& true -H 'Authorization: Bearer ab.cd-5521' 'https://x/?key=qq-6610' | cat")
    ws.profile({"id": "b", "hooks": {"execute": {"ruhroh": {"command": ["bash", "-c", script]}}}})
    ws.profile({"id": "s", "hooks": {"execute": {"ruhroh": {"command": f'bash -lc "{script}"'}}}},
               active=False)
    ws.scenario({"id": "t", "goal": "hi", "criteria": [{"contains": "fine"}]})
    secrets = ("pw-4411", "pl41n-9931", "tk-7723", "ab.cd-5521", "qq-6610")
    shown = (f"A=1 DB_PASSWORD=[hidden] {wrapper} --api-key [hidden] --token=[hidden] && true "
             "-H 'Authorization: Bearer [hidden]' 'https://x/?key=[hidden]' | cat")
    for name in ("b", "s"):
        doc = json.loads(cli(rook_cli, ws, "show", name, "--json").stdout)
        command = doc["hooks"]["execute"]["ruhroh"]["command"]
        assert (shlex.split(command) if isinstance(command, str) else command)[-1] == shown, command
        said = cli(rook_cli, ws, "show", name).stdout + cli(rook_cli, ws, "test", name).stdout
        said += (r := rook_cli("run", "--profile", name)).stdout + r.stderr
        assert r.exit_code == 0, r.stdout + r.stderr
        copies = "".join(p.read_text() for p in ws.runs_dir.glob("*/profile.yaml"))
        assert "[hidden]" in copies
        for secret in secrets:
            assert secret not in said + copies, secret


def test_curl_s_user_and_password_is_hidden_wherever_the_command_is_shown(rook_workspace, rook_cli):
    """curl's ``-u user:password`` in a wrapper's command (its words, or a ``bash
    -c`` script) was shown whole by ``rook profile show``, ``rook profile test``,
    ``rook doctor`` and a run's ``profile.yaml``. The password is hidden as a
    header's token is (the user stays), the user when the password is empty
    (``-u KEY:``); another program's ``-u`` (``docker -u 1000:1000``) is shown."""
    ws = rook_workspace
    wrapper = ws.script("w.sh", BASH_C_WRAPPER)
    script = (f"{wrapper}; exit 0; curl -s -u bob:pw-1101 --user cy:pw-2202 -ubob:pw-3303 "
              "--user=al:pw-4404 -sSu dee:pw-5505 -U px:pw-6606 -u stripe-key-7707: https://x/ "
              "&& docker run -u 1000:1000 img")
    ws.profile({"id": "b", "hooks": {"execute": {"ruhroh": {"command": ["bash", "-c", script]}}}})
    ws.profile({"id": "w", "hooks": {"execute": {"ruhroh": {
        "command": "curl.exe --user eve:pw-8808 https://x/"}}}}, active=False)
    ws.scenario({"id": "t", "goal": "hi", "criteria": [{"contains": "fine"}]})
    secrets = [f"pw-{n}{n}0{n}" for n in range(1, 7)] + ["stripe-key-7707", "pw-8808"]
    shown = (f"{wrapper}; exit 0; curl -s -u bob:[hidden] --user cy:[hidden] -ubob:[hidden] "
             "--user=al:[hidden] -sSu dee:[hidden] -U px:[hidden] -u [hidden]: https://x/ "
             "&& docker run -u 1000:1000 img")
    doc = json.loads(cli(rook_cli, ws, "show", "b", "--json").stdout)
    assert doc["hooks"]["execute"]["ruhroh"]["command"][-1] == shown
    doc = json.loads(cli(rook_cli, ws, "show", "w", "--json").stdout)
    assert doc["hooks"]["execute"]["ruhroh"]["command"] == "curl.exe --user eve:[hidden] https://x/"
    said = "".join(cli(rook_cli, ws, "show", n).stdout for n in ("b", "w"))
    said += cli(rook_cli, ws, "test", "b").stdout
    said += (r := rook_cli("doctor")).stdout + r.stderr
    said += (r := rook_cli("run")).stdout + r.stderr
    assert r.exit_code == 0, r.stdout + r.stderr
    copies = "".join(p.read_text() for p in ws.runs_dir.glob("*/profile.yaml"))
    copy = yaml.safe_load(copies)
    assert copy["hooks"]["execute"]["ruhroh"]["command"][-1] == shown
    for secret in secrets:
        assert secret not in said + copies, secret


@pytest.mark.timeout(60)
def test_show_of_a_long_word_in_a_value_is_shown_not_stuck(rook_workspace, rook_cli):
    # looking for URLs in a value tried every letter of a long word as the
    # start of a scheme: 50,000 letters under hook_env took over a minute
    ws = rook_workspace
    word = "a" * 100_000
    ws.script("a.sh", "#!/bin/bash\necho '{\"output\": \"a\"}'\n")
    ws.profile({"id": "long", "hooks": {"execute": "scripts/a.sh"}, "hook_env": {"NOTE": word}})
    r = cli(rook_cli, ws, "show", "long")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"NOTE={word}" in r.stdout


def test_an_id_wins_over_another_profiles_file_name(rook_workspace, rook_cli):
    # foo.yaml holds id "bar" (a file renamed on disk); bar.yaml holds id "baz".
    # `use foo` writes the id "bar": it must go on naming foo.yaml, not bar.yaml.
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "a"}\'\n')
    ws.profile({"id": "bar", "name": "Foo", "hooks": {"execute": "scripts/a.sh"}}, name="foo")
    ws.profile({"id": "baz", "name": "Bar", "hooks": {"execute": "scripts/a.sh"}}, name="bar")
    assert cli(rook_cli, ws, "use", "foo").exit_code == 0
    r = cli(rook_cli, ws, "show", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == "bar" and json.loads(r.stdout)["name"] == "Foo"
    listed = json.loads(cli(rook_cli, ws, "list", "--json").stdout)
    assert [p["id"] for p in listed if p["active"]] == ["bar"]
    shown = json.loads(cli(rook_cli, ws, "show", "bar", "--json").stdout)
    assert shown["name"] == "Foo"


def test_a_name_two_profiles_share_is_refused(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "a"}\'\n')
    ws.profile({"id": "one", "name": "Desk", "hooks": {"execute": "scripts/a.sh"}})
    ws.profile({"id": "two", "name": "Desk", "hooks": {"execute": "scripts/a.sh"}}, active=False)
    before = (ws.agent_dir / "profiles" / "active").read_text()
    r = cli(rook_cli, ws, "use", "Desk")
    assert r.exit_code == 2
    assert "one" in r.stderr and "two" in r.stderr and "Desk" in r.stderr
    assert (ws.agent_dir / "profiles" / "active").read_text() == before
    assert cli(rook_cli, ws, "use", "two").exit_code == 0


def test_two_files_with_one_id_are_refused(rook_workspace, rook_cli):
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "a"}\'\n')
    ws.profile({"id": "same", "name": "A", "hooks": {"execute": "scripts/a.sh"}}, name="a")
    ws.profile({"id": "same", "name": "B", "hooks": {"execute": "scripts/a.sh"}}, name="b")
    r = cli(rook_cli, ws, "show", "same")
    assert r.exit_code == 2 and "a.yaml" in r.stderr and "b.yaml" in r.stderr


def test_an_active_file_naming_no_profile_says_so(rook_workspace, rook_cli):
    ws = rook_workspace
    two_profiles(ws)
    active = ws.agent_dir / "profiles" / "active"
    active.write_text("gone\n")
    r = cli(rook_cli, ws, "show")
    assert r.exit_code == 2
    assert str(active) in r.stderr and "'gone'" in r.stderr and "rook profile use" in r.stderr


def test_list_flags_an_id_two_files_hold(rook_workspace, rook_cli):
    # ids are unique, but `run --profile local` takes local.yaml without reading
    # the others: a copy holding the same id was listed as a second, valid
    # profile, and nothing but `rook doctor` said which one runs
    ws = rook_workspace
    two_profiles(ws)
    pdir = ws.agent_dir / "profiles"
    (pdir / "copy.yaml").write_text((pdir / "local.yaml").read_text())
    listed = json.loads(cli(rook_cli, ws, "list", "--json").stdout)
    twins = [p for p in listed if p["id"] == "local"]
    assert len(twins) == 2 and all(
        p["problem"] == "the id 'local' is held by copy.yaml and local.yaml: give each its own"
        for p in twins), listed
    assert [p["problem"] for p in listed if p["id"] == "staging"] == [""]


def test_list_warns_when_the_active_file_names_no_profile(rook_workspace, rook_cli):
    ws = rook_workspace
    two_profiles(ws)
    active = ws.agent_dir / "profiles" / "active"
    active.write_text("gone\n")
    r = cli(rook_cli, ws, "list")
    assert r.exit_code == 0
    assert "*" not in r.stdout
    assert str(active) in r.stderr and "'gone'" in r.stderr and "rook profile use" in r.stderr
    r = cli(rook_cli, ws, "list", "--json")
    assert r.exit_code == 0 and not any(row["active"] for row in json.loads(r.stdout))
    assert "'gone'" in r.stderr


def test_list_names_every_problem_of_a_broken_profile(rook_workspace, rook_cli):
    # list showed the last line of the error only: a file with two misspelt
    # fields said one, and fixing it revealed the next
    ws = rook_workspace
    two_profiles(ws)
    (ws.agent_dir / "profiles" / "broken.yaml").write_text(
        "id: broken\nhooks: {execute: scripts/a.sh}\ncapabilites: {}\nhook-env: {X: '1'}\n"
    )
    r = cli(rook_cli, ws, "list")
    row = next(ln for ln in r.stdout.splitlines() if "broken" in ln)
    assert "capabilites" in row and "hook-env" in row, r.stdout
    listed = json.loads(cli(rook_cli, ws, "list", "--json").stdout)
    problem = next(p["problem"] for p in listed if p["id"] == "broken")
    assert "capabilites" in problem and "hook-env" in problem, problem


def test_list_table_has_no_blank_trailing_heading(rook_workspace, rook_cli):
    # the problem column had no heading: its rule printed a stray `--`, and
    # with every profile valid the table ended in a column of nothing
    ws = rook_workspace
    two_profiles(ws)
    lines = cli(rook_cli, ws, "list").stdout.splitlines()
    assert lines[0].split() == ["active", "id", "name", "hooks"], lines
    assert len(lines[1].split()) == 4, lines  # the `*` column, then id, name, hooks
    (ws.agent_dir / "profiles" / "broken.yaml").write_text("id: broken\nhooks: {}\n")
    lines = cli(rook_cli, ws, "list").stdout.splitlines()
    assert lines[0].split() == ["active", "id", "name", "hooks", "problem"], lines
    assert len(lines[1].split()) == 5, lines


def test_several_profiles_and_none_active_names_the_way_each_command_picks_one(
    rook_workspace, rook_cli
):
    """`rook profile test|show|fix` take the profile as NAME: with several profiles and
    no active one, they told the user to "choose one with --profile NAME", an option
    they do not have (click then refused it). Each now names its own form, and
    `rook profile use NAME`; `rook run` keeps --profile NAME. Following the advice works."""
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\n[ "$1" = execute ] && echo \'{"output": "a"}\'\nexit 0\n')
    for pid in ("one", "two"):
        ws.profile({"id": pid, "hooks": {"execute": "scripts/a.sh"}}, active=False)
    for command in ("test", "show", "fix"):
        r = cli(rook_cli, ws, command)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert "several profiles (one, two) and no 'active' file" in r.stderr
        assert f"choose one with rook profile {command} NAME" in r.stderr, r.stderr
        assert "rook profile use NAME" in r.stderr and "--profile" not in r.stderr
        assert cli(rook_cli, ws, command, "one").exit_code == 0
    ws.scenario({"id": "s", "goal": "hi", "criteria": [{"contains": "a"}]})
    r = rook_cli("run", "--workspace", str(ws.root))
    assert r.exit_code == 2 and "choose one with --profile NAME" in r.stderr, r.stderr
    assert "rook profile use NAME" in r.stderr
    assert cli(rook_cli, ws, "use", "two").exit_code == 0
    assert cli(rook_cli, ws, "test").exit_code == 0


def test_a_profile_is_picked_by_its_file_name_with_yaml_everywhere(rook_workspace, rook_cli):
    # The help says "id, file name or name": `--profile b.yaml` picks b.yaml
    # (id "bee") in rook run, rook runs and rook profile use/show alike.
    ws = rook_workspace
    ws.script("a.sh", '#!/bin/bash\necho \'{"output": "a"}\'\n')
    ws.profile({"id": "aye", "name": "A", "hooks": {"execute": "scripts/a.sh"}}, name="a")
    ws.profile({"id": "bee", "name": "B", "hooks": {"execute": "scripts/a.sh"}}, name="b")
    ws.scenario({"id": "s1", "goal": "say a"})
    shown = cli(rook_cli, ws, "show", "b.yaml", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == "bee"
    r = rook_cli("run", "--workspace", str(ws.root), "--profile", "b.yaml")
    assert r.exit_code == 0, r.stderr
    listed = rook_cli("runs", "--workspace", str(ws.root), "--profile", "b.yaml", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert [run["profile"] for run in json.loads(listed.stdout)["runs"]] == ["bee"]
    assert cli(rook_cli, ws, "use", "b.yaml").exit_code == 0
    assert (ws.agent_dir / "profiles" / "active").read_text().strip() == "bee"
    assert "not found" in cli(rook_cli, ws, "show", "c.yaml").stderr
