"""`python -m langchain_fstools demo`: run the offline demo."""

import sys

from langchain_fstools.demo import main

sys.exit(main())
