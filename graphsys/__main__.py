from graphsys.cli import program

program()
