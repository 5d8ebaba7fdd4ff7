from occlint.cli import run

run()
