"""What the roles promise, read from their YAML: ephemeral registration with the class labels,
a checksum-verified runner download, a credential no task can log, and no overclock by default."""

from __future__ import annotations

import ast
import re

import jinja2
import pytest
import yaml

from .conftest import REPO, ROLES, RUNNERS, SCRIPTS, load_yaml, role_tasks

RUNNER_ROLE = ROLES / "actions_runner"
UNIT = (RUNNER_ROLE / "templates" / "vkbench-runner.service.j2").read_text()
REGISTER = (SCRIPTS / "register-runner.sh").read_text()
DEFAULTS = load_yaml(RUNNER_ROLE / "defaults" / "main.yml")
ALL_ROLES = sorted(p.name for p in ROLES.iterdir() if p.is_dir())


def task_module(task: dict) -> str:
    return next(k for k in task if k.startswith("ansible.builtin."))


def render_labels(class_label: str, bench_server: bool) -> list[str]:
    env = jinja2.Environment()
    env.filters["bool"] = bool
    expression = DEFAULTS["actions_runner_labels"]
    text = env.from_string(expression).render(
        actions_runner_class_label=class_label,
        actions_runner_bench_server=bench_server,
        actions_runner_extra_labels=DEFAULTS["actions_runner_extra_labels"],
    )
    return ast.literal_eval(text.strip())


# --- ephemeral --------------------------------------------------------------------------------


def test_unit_registers_anew_before_every_start_and_restarts_after_each_job():
    register = r"^ExecStartPre=\+.+/register-runner\.sh --mode \{\{ actions_runner_registration_mode \}\} "
    assert re.search(register, UNIT, re.M)
    assert "Restart=always" in UNIT
    assert "ExecStart={{ actions_runner_dir }}/run.sh" in UNIT
    # The JIT config comes from the environment file the registration wrote, never argv.
    assert "EnvironmentFile=-/run/{{ actions_runner_service }}/jit.env" in UNIT
    assert "--jitconfig" not in UNIT


def test_both_registration_modes_are_ephemeral():
    assert DEFAULTS["actions_runner_registration_mode"] == "jit"
    validate = load_yaml(RUNNER_ROLE / "tasks" / "validate.yml")[0]["ansible.builtin.assert"]["that"]
    assert "actions_runner_registration_mode in ['jit', 'token']" in validate
    # jit: a JIT config is single-job by construction.
    assert "/actions/runners/generate-jitconfig" in REGISTER
    # token: every config.sh call carries --ephemeral; nothing makes a persistent runner.
    config_calls = re.findall(r"\./config\.sh[^\n]*(?:\\\n[^\n]*)*", REGISTER)
    assert config_calls, "register-runner.sh no longer calls config.sh in token mode"
    for call in config_calls:
        assert "--ephemeral" in call, call
    assert "--disableupdate" not in REGISTER and "--once" not in REGISTER


def test_a_watchdog_timer_restarts_a_runner_that_gave_up():
    timer = (RUNNER_ROLE / "templates" / "vkbench-runner-watchdog.timer.j2").read_text()
    service = (RUNNER_ROLE / "templates" / "vkbench-runner-watchdog.service.j2").read_text()
    assert "OnUnitActiveSec=" in timer
    assert "systemctl start --no-block {{ actions_runner_service }}.service" in service


# --- labels -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "label"), [("pi_cm4", "pi-cm4"), ("cloud_x86", "cloud-x86"), ("cloud_arm64", "cloud-arm64")]
)
def test_each_class_group_sets_its_label(group, label):
    assert load_yaml(RUNNERS / "group_vars" / f"{group}.yml")["actions_runner_class_label"] == label
    assert render_labels(label, False) == ["self-hosted", label, "bench-client"]
    assert render_labels(label, True) == ["self-hosted", label, "bench-server"]


def test_the_example_inventory_has_one_server_and_one_client_pi():
    inventory = load_yaml(RUNNERS / "inventory.example.yml")
    pis = inventory["all"]["children"]["pi_cm4"]["hosts"]
    servers = [name for name, hv in pis.items() if (hv or {}).get("actions_runner_bench_server")]
    assert len(pis) == 2 and len(servers) == 1
    assert {"cloud_x86", "cloud_arm64"} <= set(inventory["all"]["children"])


def test_labels_reach_the_registration():
    assert "--labels {{ actions_runner_labels | join(',') }}" in UNIT
    # jit sends them in the request body, token mode to config.sh.
    assert 'labels: ($labels | split(","))' in REGISTER
    assert '--labels "$labels"' in REGISTER


# --- checksum ---------------------------------------------------------------------------------


def test_runner_tarball_is_checksum_verified_before_unpacking():
    tasks = load_yaml(RUNNER_ROLE / "tasks" / "install.yml")
    downloads = [t for t in tasks if task_module(t) == "ansible.builtin.get_url"]
    assert len(downloads) == 1
    get_url = downloads[0]["ansible.builtin.get_url"]
    assert get_url["checksum"] == "sha256:{{ actions_runner_sha256[actions_runner_arch] }}"
    assert "{{ actions_runner_version }}" in get_url["url"]
    unpack = next(t for t in tasks if task_module(t) == "ansible.builtin.unarchive")["ansible.builtin.unarchive"]
    assert unpack["remote_src"] is True and unpack["src"] == get_url["dest"], "unpack only the verified file"
    for arch in ("x64", "arm64"):
        assert re.fullmatch(r"[0-9a-f]{64}", DEFAULTS["actions_runner_sha256"][arch])


# --- the credential ---------------------------------------------------------------------------


@pytest.mark.parametrize("role", ALL_ROLES)
def test_every_task_that_touches_the_token_has_no_log(role):
    for path, task in role_tasks(role):
        text = yaml.safe_dump(task)
        if "github_token" in text:  # the variable (case matters: docs may name the env var)
            assert task.get("no_log") is True, f"{path.name}: task {task.get('name')!r} handles the token without no_log: true"


def test_the_token_is_stored_root_only_and_nowhere_else():
    tasks = load_yaml(RUNNER_ROLE / "tasks" / "credential.yml")
    store = next(t for t in tasks if "github_token" in yaml.safe_dump(t))["ansible.builtin.copy"]
    assert (store["owner"], store["group"], store["mode"]) == ("root", "root", "0600")
    for template in ROLES.rglob("*.j2"):
        assert "github_token" not in template.read_text(), template
    assert "github_token" not in (RUNNERS / "site.yml").read_text()
    # The registration runs as root (+) and reads the file itself: the runner user never can.
    assert "--token-file {{ actions_runner_credential_file }}" in UNIT


# --- overclock --------------------------------------------------------------------------------


def test_overclock_is_off_by_default():
    defaults = load_yaml(ROLES / "bench_tuning" / "defaults" / "main.yml")
    assert defaults["bench_tuning_pi_overclock"] is False
    for path in [*(RUNNERS / "group_vars").glob("*.yml"), RUNNERS / "inventory.example.yml"]:
        assert "bench_tuning_pi_overclock" not in path.read_text(), f"{path} turns the overclock on"


def test_overclock_off_removes_the_config_block_and_on_warns_loudly():
    tasks = load_yaml(ROLES / "bench_tuning" / "tasks" / "pi.yml")
    config_tasks = load_yaml(ROLES / "bench_tuning" / "tasks" / "pi_config.yml")
    assert {"ansible.builtin.import_tasks": "pi_config.yml"} in [
        {k: v for k, v in t.items() if k == "ansible.builtin.import_tasks"} for t in tasks]
    block = next(t for t in config_tasks if task_module(t) == "ansible.builtin.blockinfile")
    args = block["ansible.builtin.blockinfile"]
    assert args["state"] == "{{ 'present' if bench_tuning_pi_overclock | bool else 'absent' }}"
    assert "over_voltage={{ bench_tuning_pi_over_voltage }}" in args["block"]
    assert "force_turbo" not in args["block"]
    warning = next(t for t in tasks if task_module(t) == "ansible.builtin.debug")
    assert warning["when"] == "bench_tuning_pi_overclock | bool"
    assert "OVERCLOCK ENABLED" in yaml.safe_dump(warning)


def test_pi_jobs_start_only_after_the_throttling_check():
    tasks = load_yaml(ROLES / "bench_tuning" / "tasks" / "pi.yml")
    hook = next(t for t in tasks if t["name"] == "Run the throttling check before every job")
    assert hook["ansible.builtin.template"]["dest"].endswith("/hooks/job-started.d/20-pi-throttling")


def test_a_runner_release_from_a_local_path_is_checked_against_the_same_pin():
    tasks = load_yaml(RUNNER_ROLE / "tasks" / "install.yml")
    names = [t["name"] for t in tasks]
    copy = next(t for t in tasks if t["name"].startswith("Copy the runner release from the controller"))
    check = next(t for t in tasks if t["name"].startswith("Refuse a copied release"))
    unpack = names.index("Unpack the runner release")
    assert names.index(copy["name"]) < names.index(check["name"]) < unpack
    assert check["ansible.builtin.assert"]["that"] == (
        "actions_runner_copied.stat.checksum == actions_runner_sha256[actions_runner_arch]")
    assert copy["ansible.builtin.copy"]["dest"] == next(
        t for t in tasks if task_module(t) == "ansible.builtin.get_url")["ansible.builtin.get_url"]["dest"]


def test_the_class_label_is_validated_against_the_declared_classes():
    classes = load_yaml(RUNNERS / "classes.yaml")
    validate = load_yaml(RUNNER_ROLE / "tasks" / "validate.yml")[0]["ansible.builtin.assert"]["that"]
    assert "actions_runner_class_label in actions_runner_classes.classes" in validate
    assert DEFAULTS["actions_runner_classes_file"].endswith("/classes.yaml")
    for group in ("pi_cm4", "cloud_x86", "cloud_arm64"):
        group_vars = load_yaml(RUNNERS / "group_vars" / f"{group}.yml")
        declared = classes["classes"][group_vars["actions_runner_class_label"]]
        assert group_vars["actions_runner_expected_arch"] == declared["arch"]
    # Validation runs before any role touches the machine.
    pre_tasks = load_yaml(RUNNERS / "site.yml")[0]["pre_tasks"]
    assert pre_tasks[0]["ansible.builtin.import_role"] == {"name": "actions_runner", "tasks_from": "validate.yml"}


@pytest.mark.parametrize("role", ["docker", "bench_tuning", "actions_runner"])
def test_systemd_actions_are_skipped_without_systemd(role):
    """A container (no init) gets the unit files but nothing enabled, started or restarted."""
    for path, task in role_tasks(role):
        if "ansible.builtin.systemd_service" in task or "ansible.builtin.service_facts" in task:
            when = str(task.get("when", ""))
            # ...or gated on a unit service_facts found, which only runs under systemd.
            assert "_systemd | bool" in when or "in ansible_facts.services" in when, f"{path.name}: {task['name']}"


def test_the_provisioning_test_image_downloads_each_apt_task_of_the_roles():
    """tools/setup/runner-image.sh downloads the .debs the roles install (Debian, podman engine)
    into the test image, one list per apt task: the playbook's transactions then find all of them."""
    script = (REPO / "tools/setup/runner-image.sh").read_text()

    def bash_array(name: str) -> list[str]:
        body = re.search(rf"^{name}=\(((?:[^()#]|#[^\n]*)*)\)", script, re.M).group(1)   # comments may hold ()
        return [word for line in body.splitlines() for word in line.split("#")[0].split()]

    podman = next(t for t in load_yaml(ROLES / "docker/tasks/podman.yml") if task_module(t) == "ansible.builtin.apt")
    install = next(t for t in load_yaml(RUNNER_ROLE / "tasks/install.yml") if task_module(t) == "ansible.builtin.apt")
    base = ast.literal_eval(re.search(r"\{\{ (\[.*?\]) \+ actions_runner_job_packages \}\}",
                                      install["ansible.builtin.apt"]["name"]).group(1))
    jobs = [p.replace("{{ actions_runner_perf_package }}", "linux-perf") for p in DEFAULTS["actions_runner_job_packages"]]
    assert bash_array("ENGINE_PACKAGES") == podman["ansible.builtin.apt"]["name"]
    assert sorted(bash_array("RUNNER_PACKAGES")) == sorted(base + jobs)
    assert re.search(r'^download "\$\{ENGINE_PACKAGES\[@\]\}"\ndownload "\$\{RUNNER_PACKAGES\[@\]\}"$', script, re.M)
