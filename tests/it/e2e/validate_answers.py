"""Every answer an end-to-end test received, validated against the served OpenAPI document by
openapi-core (pinned in infra/requirements.txt). `application/problem+json` is JSON to read, as
docs/http.md tells users who validate. Reads the document and a JSON list of exchanges
(`method`, `path`, `query`, `status`, `content_type`, `body`, `headers`); prints each answer the
document does not declare, and exits 1 when there is one."""

import json
import sys
from urllib.parse import parse_qsl

from openapi_core import Config, OpenAPI
from openapi_core.templating.paths.exceptions import OperationNotFound, PathNotFound
from openapi_core.testing import MockRequest, MockResponse


def main(document, exchanges):
    with open(document) as f:
        spec = json.load(f)
    # The requests go to the stack's own URL; the document names it as a variable.
    spec["servers"] = [{"url": "http://stack"}]
    config = Config(extra_media_type_deserializers={"application/problem+json": json.loads})
    openapi = OpenAPI.from_dict(spec, config=config)
    with open(exchanges) as f:
        seen = json.load(f)
    wrong, outside = [], 0
    for x in seen:
        request = MockRequest(
            "http://stack", x["method"].lower(), x["path"],
            args=dict(parse_qsl(x.get("query") or "")),
            headers={"Authorization": "Bearer x"},
            content_type="application/json",
        )
        response = MockResponse(
            x["body"].encode(), status_code=x["status"],
            content_type=x["content_type"], headers=x.get("headers") or {},
        )
        try:
            openapi.validate_response(request, response)
        except (PathNotFound, OperationNotFound):
            # A path or method the document does not have is answered 404 or 405, nothing else.
            if x["status"] not in (404, 405):
                wrong.append(f'{x["method"]} {x["path"]} {x["status"]}: not in the document')
            else:
                outside += 1
        except Exception as e:  # every refusal of openapi-core's, named with its cause
            cause = getattr(e, "__cause__", None)
            wrong.append(f'{x["method"]} {x["path"]} {x["status"]}: {type(e).__name__}: {e} {cause or ""}'[:800])
    print(json.dumps({"validated": len(seen) - outside, "outside": outside, "wrong": wrong}))
    sys.exit(1 if wrong else 0)


main(sys.argv[1], sys.argv[2])
