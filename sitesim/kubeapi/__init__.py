"""A simulated Kubernetes API server that kubectl and the kubernetes client can drive."""

from sitesim.kubeapi.cluster import KubeCluster
from sitesim.kubeapi.seed import seed_workloads
from sitesim.kubeapi.server import KubeServer, serve, write_kubeconfig
from sitesim.kubeapi.state import KubeTimings
from sitesim.kubeapi.wsgi import make_wsgi_app

__all__ = ["KubeCluster", "KubeServer", "KubeTimings", "make_wsgi_app", "seed_workloads",
           "serve", "write_kubeconfig"]
