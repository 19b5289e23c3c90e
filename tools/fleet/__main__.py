import sys

from tools.fleet.cli import main

sys.exit(main())
