"""`python -m langchain_fstools demo` runs the offline demo; `... mcp` serves MCP clients."""

import sys

from langchain_fstools.commands import main

sys.exit(main())
