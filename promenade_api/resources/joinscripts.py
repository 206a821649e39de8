"""GET /join-scripts: the script a freshly deployed host runs to join Kubernetes."""

from __future__ import annotations

import falcon

from common.errors import BadRequest
from common.policy import authorize
from common.status import simple_message
from promenade_api import joinscript
from promenade_api.service import Promenade


class JoinScriptsResource:
    """200 the node's join script (text/x-shellscript); 400 listing every missing or bad
    parameter, and a hostname the design does not hold."""

    def __init__(self, svc: Promenade) -> None:
        self._svc = svc

    @authorize("kubernetes_provisioner:get_join_scripts")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        request, problems = joinscript.parse_request(req.params)
        if request is None:
            raise BadRequest("Invalid join script request",
                             messages=[simple_message(p) for p in problems])
        found = joinscript.design_problems(request, self._svc.design(request.design_ref,
                                                                     req.context.berth))
        if found:
            raise BadRequest("Invalid join script request",
                             messages=[simple_message(p) for p in found])
        resp.content_type = joinscript.CONTENT_TYPE
        resp.text = joinscript.render_script(request)
