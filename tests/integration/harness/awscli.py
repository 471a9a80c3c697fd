"""Runs the AWS CLI (/usr/bin/aws) against an endpoint with an isolated config."""
import json
import os
import subprocess
import tempfile

AWS = "/usr/bin/aws"


def run(target, *args, timeout=300, check=True):
    """Runs `aws ARGS --endpoint-url ENDPOINT` with target's key pair.

    target has endpoint, access_key, secret_key (a gateway or an upstream).
    Returns the CompletedProcess; raises AssertionError with the output if
    check and the command failed.
    """
    with tempfile.TemporaryDirectory(prefix="s3cached-it-aws-") as home:
        config = os.path.join(home, "config")
        with open(config, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({
            "HOME": home,
            "AWS_CONFIG_FILE": config,
            "AWS_SHARED_CREDENTIALS_FILE": os.path.join(home, "credentials"),
            "AWS_ACCESS_KEY_ID": target.access_key,
            "AWS_SECRET_ACCESS_KEY": target.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_RETRY_MODE": "standard",
            "AWS_MAX_ATTEMPTS": "1",
            "AWS_PAGER": "",
        })
        argv = [AWS] + list(args) + ["--endpoint-url", target.endpoint]
        res = subprocess.run(argv, env=env, capture_output=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    if check and res.returncode != 0:
        raise AssertionError("%s exited %d\nstdout: %s\nstderr: %s" % (
            " ".join(args), res.returncode, res.stdout.decode(errors="replace"),
            res.stderr.decode(errors="replace")))
    return res


def run_json(target, *args, **kw):
    """run() for an s3api command; returns its parsed JSON output."""
    out = run(target, *args, "--output", "json", **kw).stdout
    return json.loads(out) if out.strip() else {}
