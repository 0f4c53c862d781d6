import sys

from graphsys.cli import main

sys.exit(main())
