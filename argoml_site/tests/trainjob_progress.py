"""What the TrainJob example's test (test_examples.py) does on the dev stack besides kubectl: a pod that is
not the TrainJob's trying to report for it, and the dashboard opened as a signed-in user."""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.parse
import urllib.request

# A pod of the namespace that is not the TrainJob's tries to report for it, as anyone there could: with no
# token, a token that is no token, its own ServiceAccount token (the API server's audience), and a token of
# the TrainJob's own audience, which any pod may ask its kubelet for (a projected volume).
FORGER = """
import json, pathlib, ssl, sys, urllib.error, urllib.request
from datetime import datetime, timezone
url = sys.argv[1]
account = "/var/run/secrets/kubernetes.io/serviceaccount"
context = ssl.create_default_context(cafile="/forged/ca.crt")
status = {"progressPercentage": 99, "metrics": [{"name": "loss", "value": "0"}],
          "lastUpdatedTime": datetime.now(timezone.utc).isoformat()}
tokens = {
    "none": None,
    "garbage": "not-a-token",
    "service_account": pathlib.Path(f"{account}/token").read_text().strip(),
    "job_audience_other_pod": pathlib.Path("/forged/token").read_text().strip(),
}
answers = {}
for case, token in tokens.items():
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps({"trainerStatus": status}).encode()
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        answer = urllib.request.urlopen(request, context=context, timeout=30)
    except urllib.error.HTTPError as error:
        answer = error
    answers[case] = [answer.status, json.loads(answer.read()).get("reason")]
print("RESULT " + json.dumps(answers, sort_keys=True))
"""


def forger_pod(namespace: str, url: str, audience: str, ca_config_map: str) -> str:
    """The forger as a Pod manifest (JSON, for `kubectl apply -f -`): `url` is the TrainJob's endpoint, and
    its projected volume holds a token of `audience` and the CA of `ca_config_map`."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "xgb-progress-forger", "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "forger",
                    "image": "python:3.11",
                    "command": ["python", "-c", FORGER, url],
                    "volumeMounts": [{"name": "forged", "mountPath": "/forged"}],
                }
            ],
            "volumes": [
                {
                    "name": "forged",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"audience": audience, "path": "token"}},
                            {"configMap": {"name": ca_config_map}},
                        ]
                    },
                }
            ],
        },
    }
    return json.dumps(pod)


def signed_in(base_url: str, username: str, password: str) -> urllib.request.OpenerDirector:
    """A browser's session on the dashboard: its sign-in form posted with its CSRF token, cookies kept."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    login = f"{base_url}/dashboard/login/"
    page = opener.open(login, timeout=30).read().decode()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found is not None, page
    form = {"username": username, "password": password, "csrfmiddlewaretoken": found.group(1)}
    request = urllib.request.Request(
        login, data=urllib.parse.urlencode(form).encode(), headers={"Referer": login}
    )
    assert opener.open(request, timeout=30).geturl() == f"{base_url}/dashboard/", "signed in"
    return opener
