"""Files in object storage (S3, GCS, Azure Blob, any S3-compatible store) via obstore.

Modules: `backend` (the backend contract mapped onto objects), `requests` (store
requests as data, driven by obstore's sync or native async calls), `search` (glob and
grep over listing pages, fetching objects concurrently). Needs the `objectstore` extra.
"""

from langchain_fstools.core.extras import require

require("obstore", extra="objectstore", feature="ObjectStoreBackend")

from langchain_fstools.backends.objectstore.backend import MARKER, ObjectStoreBackend  # noqa: E402

__all__ = ["MARKER", "ObjectStoreBackend"]
