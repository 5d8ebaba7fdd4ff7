import sys

from occlint.cli import main

sys.exit(main())
